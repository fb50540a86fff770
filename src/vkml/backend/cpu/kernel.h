// What every CPU kernel file includes: the kernel signature and registry (core/kernel.h) and the
// shape arithmetic shared with the op table (core/geometry.h). The backend sees nothing of ops/.
#pragma once
#include "vkml/backend/cpu/isa.h"
#include "vkml/core/geometry.h"
#include "vkml/core/kernel.h"
#include "vkml/core/tensor.h"

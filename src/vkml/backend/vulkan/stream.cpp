// The stream of work on the device (context.h): recording, batching, barriers, host transfers,
// and the memory that follows them.
#include <algorithm>
#include <cstring>
#include <vector>

#include "vkml/backend/vulkan/context.h"

namespace vk::vulkan {
namespace {

constexpr VkPipelineStageFlags kWork =
    VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT;
constexpr VkAccessFlags kWrites = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
constexpr VkAccessFlags kAccesses =
    kWrites | VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_TRANSFER_READ_BIT;

}  // namespace

// ---- memory ----

std::unique_ptr<Buffer> Context::allocate_locked(size_t nbytes, bool host) {
  poll();
  try {
    return allocator_->allocate(nbytes, host);
  } catch (const MemoryError&) {
    // Memory released under work in flight, and cached blocks, may make room: wait for all of
    // it, hand the empty blocks back, and try once more.
    flush();
    wait_for(last_serial_);
    allocator_->collect(completed_);
    allocator_->empty_cache();
    return allocator_->allocate(nbytes, host);
  }
}

std::unique_ptr<Buffer> Context::allocate(size_t nbytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  return allocate_locked(nbytes, false);
}

void Context::release(std::unique_ptr<Buffer> b) noexcept {
  std::lock_guard<std::mutex> lock(mutex_);
  allocator_->release(std::move(b), completed_);
}

size_t Context::memory_allocated() {
  std::lock_guard<std::mutex> lock(mutex_);
  return allocator_->allocated();
}

size_t Context::memory_reserved() {
  std::lock_guard<std::mutex> lock(mutex_);
  return allocator_->reserved();
}

void Context::empty_cache() {
  std::lock_guard<std::mutex> lock(mutex_);
  flush();
  wait_for(last_serial_);
  allocator_->collect(completed_);
  allocator_->empty_cache();
}

StreamStats Context::stats() {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

// ---- batches ----

VkCommandBuffer Context::recording() {
  Frame& f = frames_[current_];
  if (recording_) return f.cb;
  if (f.in_flight) wait_for(f.serial);  // the oldest batch: its frame is needed again
  api_.vkResetCommandPool(device_, f.pool, 0);
  api_.vkResetDescriptorPool(device_, f.descriptors, 0);
  VkCommandBufferBeginInfo bi{.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
                              .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT};
  VKML_VK_OK(api_.vkBeginCommandBuffer(f.cb, &bi), "vkBeginCommandBuffer");
  f.serial = ++last_serial_;
  recording_ = true;
  batch_dispatches_ = 0;
  // Barriers order commands within a submission and across earlier ones on this queue: this one
  // orders the batch after everything submitted before it (host writes before a submission are
  // visible to it without one).
  VkMemoryBarrier before{.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
                         .srcAccessMask = kWrites,
                         .dstAccessMask = kAccesses};
  api_.vkCmdPipelineBarrier(f.cb, kWork, kWork, 0, 1, &before, 0, nullptr, 0, nullptr);
  read_.clear();
  written_.clear();
  return f.cb;
}

void Context::order(std::span<Buffer* const> reads, std::span<Buffer* const> writes) {
  const bool hazard =
      std::any_of(reads.begin(), reads.end(), [&](Buffer* b) { return written_.count(b); }) ||
      std::any_of(writes.begin(), writes.end(),
                  [&](Buffer* b) { return written_.count(b) || read_.count(b); });
  if (hazard) {
    VkMemoryBarrier barrier{.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
                            .srcAccessMask = kWrites,
                            .dstAccessMask = kAccesses};
    api_.vkCmdPipelineBarrier(frames_[current_].cb, kWork, kWork, 0, 1, &barrier, 0, nullptr, 0,
                              nullptr);
    read_.clear();
    written_.clear();
    ++stats_.barriers;
  }
  const uint64_t serial = frames_[current_].serial;
  for (Buffer* b : reads) {
    read_.insert(b);
    b->last_use = serial;
  }
  for (Buffer* b : writes) {
    written_.insert(b);
    b->last_use = serial;
  }
}

void Context::flush() {
  if (!recording_) return;
  Frame& f = frames_[current_];
  recording_ = false;
  current_ = (current_ + 1) % kFrames;
  // What the batch wrote is visible to the host once its fence is signalled.
  VkMemoryBarrier after{.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
                        .srcAccessMask = kWrites,
                        .dstAccessMask = VK_ACCESS_HOST_READ_BIT};
  api_.vkCmdPipelineBarrier(f.cb, kWork, VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &after, 0, nullptr, 0,
                            nullptr);
  VKML_VK_OK(api_.vkEndCommandBuffer(f.cb), "vkEndCommandBuffer");
  api_.vkResetFences(device_, 1, &f.fence);
  VkSubmitInfo si{
      .sType = VK_STRUCTURE_TYPE_SUBMIT_INFO, .commandBufferCount = 1, .pCommandBuffers = &f.cb};
  VKML_VK_OK(api_.vkQueueSubmit(queue_, 1, &si, f.fence), "vkQueueSubmit");
  f.in_flight = true;
  ++stats_.submissions;
}

void Context::wait_for(uint64_t serial) {
  if (serial <= completed_) return;
  if (recording_ && frames_[current_].serial <= serial) flush();
  // Batches complete in submission order: wait for each up to `serial`, oldest first.
  std::vector<Frame*> waiting;
  for (Frame& f : frames_)
    if (f.in_flight && f.serial <= serial) waiting.push_back(&f);
  std::sort(waiting.begin(), waiting.end(),
            [](const Frame* a, const Frame* b) { return a->serial < b->serial; });
  if (!waiting.empty()) ++stats_.host_waits;
  for (Frame* f : waiting) {
    VKML_VK_OK(api_.vkWaitForFences(device_, 1, &f->fence, VK_TRUE, UINT64_MAX), "vkWaitForFences");
    f->in_flight = false;
    completed_ = std::max(completed_, f->serial);
  }
  allocator_->collect(completed_);
}

void Context::poll() {
  std::vector<Frame*> flying;
  for (Frame& f : frames_)
    if (f.in_flight) flying.push_back(&f);
  std::sort(flying.begin(), flying.end(),
            [](const Frame* a, const Frame* b) { return a->serial < b->serial; });
  for (Frame* f : flying) {
    if (api_.vkGetFenceStatus(device_, f->fence) != VK_SUCCESS) break;
    f->in_flight = false;
    completed_ = f->serial;
  }
  allocator_->collect(completed_);
}

void Context::synchronize() {
  std::lock_guard<std::mutex> lock(mutex_);
  flush();
  wait_for(last_serial_);
  raise_deferred();
}

// ---- deferred errors (vkfix) ----

Buffer& Context::error_word() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!error_word_) {
    // Host-visible, coherent memory: the host reads the word without a copy.
    error_word_ = allocate_locked(4 * sizeof(uint32_t), true);
    std::memset(error_word_->mapped, 0, 4 * sizeof(uint32_t));
  }
  return *error_word_;
}

uint32_t Context::expect_in_range(std::string op, std::string rest) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (++next_slot_ == 0) ++next_slot_;  // 0 is "no error"
  // The launch that follows lands in the batch being recorded or, when that one is full, the
  // next: by last_serial_ + 1 at the latest.
  deferred_[next_slot_] = {std::move(op), std::move(rest), last_serial_ + 1};
  return next_slot_;
}

uint32_t Context::expect_valid(std::string op, std::string message, ErrorKind kind) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (++next_slot_ == 0) ++next_slot_;
  deferred_[next_slot_] = {std::move(op), std::move(message), last_serial_ + 1, false, kind};
  return next_slot_;
}

void Context::raise_deferred() {
  if (!error_word_) return;
  volatile uint32_t* word = static_cast<volatile uint32_t*>(error_word_->mapped);
  if (word[0] == 0) {
    // Nothing raised by the completed work: forget its checks.
    std::erase_if(deferred_, [&](const auto& kv) { return kv.second.serial <= completed_; });
    return;
  }
  // A shader raised one: wait for all the work, so that the value beside the slot is written.
  flush();
  wait_for(last_serial_);
  const uint32_t slot = word[0];
  const int64_t value =
      static_cast<int64_t>((static_cast<uint64_t>(word[2]) << 32) | static_cast<uint64_t>(word[1]));
  for (int k = 0; k < 3; ++k) word[k] = 0;
  const auto it = deferred_.find(slot);
  const Deferred d = it != deferred_.end() ? it->second : Deferred{"vulkan", "", 0};
  deferred_.clear();  // everything recorded has completed
  const char* when =
      " (raised by the device when the result was read: ops on the vulkan device run in batches)";
  if (!d.with_value) {
    const std::string what = detail::cat(d.op, ": ", d.rest, when);
    if (d.kind == ErrorKind::Runtime) throw RuntimeError(what);
    throw IndexError(what);
  }
  throw IndexError(detail::cat(d.op, ": index ", value, d.rest, when));
}

// ---- commands ----

void Context::dispatch(const Pipeline& p, std::span<Buffer* const> buffers, const void* push,
                       uint64_t groups, uint32_t writes) {
  if (groups == 0) return;
  const uint64_t gx = std::min<uint64_t>(groups, max_groups_[0]);
  const uint64_t gy = (groups + gx - 1) / gx;
  VK_CHECK(gy <= max_groups_[1], SizeError, "vulkan: ", groups,
           " workgroups are more than one dispatch holds");
  dispatch(p, buffers, push, Groups{static_cast<uint32_t>(gx), static_cast<uint32_t>(gy), 1},
           writes);
}

void Context::dispatch(const Pipeline& p, std::span<Buffer* const> buffers, const void* push,
                       Groups groups, uint32_t writes) {
  VK_CHECK(buffers.size() == p.bindings && writes <= buffers.size(), RuntimeError,
           "vulkan: a pipeline of ", p.bindings, " buffers was given ", buffers.size(), " (",
           writes, " written)");
  if (groups.x == 0 || groups.y == 0 || groups.z == 0) return;
  VK_CHECK(groups.x <= max_groups_[0] && groups.y <= max_groups_[1] && groups.z <= max_groups_[2],
           SizeError, "vulkan: ", groups.x, " x ", groups.y, " x ", groups.z,
           " workgroups are more than ", device_name_, " runs in one dispatch (", max_groups_[0],
           " x ", max_groups_[1], " x ", max_groups_[2], ")");
  std::lock_guard<std::mutex> lock(mutex_);
  if (recording_ && batch_dispatches_ >= kBatch) flush();
  VkCommandBuffer cb = recording();
  VkDescriptorSetAllocateInfo dsai{.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO,
                                   .descriptorPool = frames_[current_].descriptors,
                                   .descriptorSetCount = 1,
                                   .pSetLayouts = &p.set_layout};
  VkDescriptorSet set;
  VKML_VK_OK(api_.vkAllocateDescriptorSets(device_, &dsai, &set), "vkAllocateDescriptorSets");
  VkDescriptorBufferInfo infos[kMaxBindings];
  VkWriteDescriptorSet updates[kMaxBindings];
  for (size_t i = 0; i < buffers.size(); ++i) {
    infos[i] = {
        .buffer = buffers[i]->buffer, .offset = buffers[i]->offset, .range = buffers[i]->size};
    updates[i] = {.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET,
                  .dstSet = set,
                  .dstBinding = static_cast<uint32_t>(i),
                  .descriptorCount = 1,
                  .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                  .pBufferInfo = &infos[i]};
  }
  api_.vkUpdateDescriptorSets(device_, static_cast<uint32_t>(buffers.size()), updates, 0, nullptr);
  order(buffers.subspan(writes), buffers.first(writes));
  api_.vkCmdBindPipeline(cb, VK_PIPELINE_BIND_POINT_COMPUTE, p.pipeline);
  api_.vkCmdBindDescriptorSets(cb, VK_PIPELINE_BIND_POINT_COMPUTE, p.layout, 0, 1, &set, 0,
                               nullptr);
  if (p.push_bytes)
    api_.vkCmdPushConstants(cb, p.layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, p.push_bytes, push);
  api_.vkCmdDispatch(cb, groups.x, groups.y, groups.z);
  ++batch_dispatches_;
  ++stats_.dispatches;
}

void Context::copy(Buffer& dst, size_t dst_offset, Buffer& src, size_t src_offset, size_t nbytes) {
  if (nbytes == 0) return;
  std::lock_guard<std::mutex> lock(mutex_);
  if (recording_ && batch_dispatches_ >= kBatch) flush();
  VkCommandBuffer cb = recording();
  Buffer* reads[] = {&src};
  Buffer* writes[] = {&dst};
  order(reads, writes);
  VkBufferCopy region{
      .srcOffset = src.offset + src_offset, .dstOffset = dst.offset + dst_offset, .size = nbytes};
  api_.vkCmdCopyBuffer(cb, src.buffer, dst.buffer, 1, &region);
  ++batch_dispatches_;
}

void Context::upload(Buffer& dst, size_t offset, const void* src, size_t nbytes) {
  if (nbytes == 0) return;
  std::lock_guard<std::mutex> lock(mutex_);
  ++stats_.host_to_device;
  stats_.host_to_device_bytes += nbytes;
  if (dst.mapped) {
    wait_for(dst.last_use);  // work in flight may still read or write it
    std::memcpy(static_cast<char*>(dst.mapped) + offset, src, nbytes);
    return;
  }
  // Through a staging range, copied in stream order: no wait, and the staging memory returns
  // once the copy has run.
  ++stats_.staged;
  std::unique_ptr<Buffer> staging = allocate_locked(nbytes, true);
  std::memcpy(staging->mapped, src, nbytes);
  if (recording_ && batch_dispatches_ >= kBatch) flush();
  VkCommandBuffer cb = recording();
  Buffer* reads[] = {staging.get()};
  Buffer* writes[] = {&dst};
  order(reads, writes);
  VkBufferCopy region{
      .srcOffset = staging->offset, .dstOffset = dst.offset + offset, .size = nbytes};
  api_.vkCmdCopyBuffer(cb, staging->buffer, dst.buffer, 1, &region);
  ++batch_dispatches_;
  allocator_->release(std::move(staging), completed_);
}

void Context::download(void* dst, Buffer& src, size_t offset, size_t nbytes) {
  if (nbytes == 0) return;
  std::lock_guard<std::mutex> lock(mutex_);
  ++stats_.device_to_host;
  stats_.device_to_host_bytes += nbytes;
  if (src.mapped) {
    wait_for(src.last_use);
    std::memcpy(dst, static_cast<const char*>(src.mapped) + offset, nbytes);
    raise_deferred();
    return;
  }
  ++stats_.staged;
  std::unique_ptr<Buffer> staging = allocate_locked(nbytes, true);
  VkCommandBuffer cb = recording();
  Buffer* reads[] = {&src};
  Buffer* writes[] = {staging.get()};
  order(reads, writes);
  VkBufferCopy region{
      .srcOffset = src.offset + offset, .dstOffset = staging->offset, .size = nbytes};
  api_.vkCmdCopyBuffer(cb, src.buffer, staging->buffer, 1, &region);
  wait_for(staging->last_use);
  std::memcpy(dst, staging->mapped, nbytes);
  allocator_->release(std::move(staging), completed_);
  raise_deferred();
}

}  // namespace vk::vulkan

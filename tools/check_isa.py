#!/usr/bin/env python3
"""Checks that a binary linked with vkml's dispatching CPU backend runs on a plain x86-64.

The kernel files are compiled three times (src/vkml/backend/cpu/isa.h): for x86-64, x86-64-v3
(AVX2) and x86-64-v4 (AVX-512), the wide copies in namespaces vk::cpu::avx2 / avx512, each sealed
so that its only global functions are that namespace's (cmake/vkml_seal_copy.cmake), which run
only after capability.cpp checked the machine. Wide instructions in any other global function mean
that wide code reached a name generic callers share: SIGILL on a CPU without that instruction set.
This disassembles the binary (objdump; it must keep its symbol table) and lists every global or
weak function outside the wide namespaces that holds a VEX/EVEX instruction (a mnemonic beginning
with v), a ymm/zmm/mask register, or a BMI/LZCNT/MOVBE/POPCNT instruction. It also checks that the
wide copies are there and use their registers, so that it cannot pass on a binary without them.
(Local functions may be wide: a sealed copy's own instances of std::vector's members, say.)

usage: check_isa.py BINARY...
"""
import re
import subprocess
import sys

# The wide copies' namespaces in a mangled name (vk::cpu::avx2, vk::vmath::avx512, ... directly,
# through a substitution, or as a template argument).
WIDE = {"avx2": re.compile(r"(3cpu|5vmath|S[0-9A-Z]*_)4avx2"),
        "avx512": re.compile(r"(3cpu|5vmath|S[0-9A-Z]*_)6avx512")}
REGISTER = {"avx2": "%ymm", "avx512": "%zmm"}
# Scalar instructions of x86-64-v2/v3 that a baseline compile never emits. (tzcnt is left out: GCC
# emits `rep bsf` for generic x86-64, which older CPUs run as bsf and objdump prints as tzcnt.)
SCALAR_BEYOND = {"popcnt", "lzcnt", "andn", "bextr", "blsi", "blsmsk", "blsr", "bzhi", "mulx",
                 "pdep", "pext", "rorx", "sarx", "shlx", "shrx", "movbe"}
PREFIXES = {"rep", "repz", "repnz", "lock", "notrack", "bnd", "data16", "cs", "ds"}
FUNC = re.compile(r"^([0-9a-f]+) <(.*)>:$")
INSN = re.compile(r"^\s+[0-9a-f]+:\s+(\S+)\s*(.*)$")


def beyond_baseline(mnemonic, operands):
    return (mnemonic.startswith("v") or mnemonic in SCALAR_BEYOND
            or re.search(r"%[yz]mm\d|%k[0-7]\b", operands) is not None)


def function_symbols(path):
    """address -> (global or weak?, [names]) of the binary's FUNC symbols."""
    out = subprocess.run(["readelf", "-sW", path], check=True, capture_output=True,
                         text=True).stdout
    if "Symbol table '.symtab'" not in out:
        return None
    funcs = {}
    for line in out.splitlines():
        f = line.split()
        if len(f) < 8 or f[3] != "FUNC" or f[6] == "UND":
            continue
        addr = int(f[1], 16)
        is_global, names = funcs.get(addr, (False, []))
        funcs[addr] = (is_global or f[4] in ("GLOBAL", "WEAK", "UNIQUE"), names + [f[7]])
    return funcs


def check(path):
    funcs = function_symbols(path)
    if funcs is None:
        print(f"{path}: stripped: no symbol table to check")
        return False
    out = subprocess.run(["objdump", "-d", "--no-show-raw-insn", path], check=True,
                         capture_output=True, text=True).stdout
    leaks = {}  # function -> first offending instruction
    wide_use = {w: 0 for w in WIDE}
    checked = 0
    wide, exported, name = [], False, None
    for line in out.splitlines():
        m = FUNC.match(line)
        if m:
            exported, names = funcs.get(int(m.group(1), 16), (False, [m.group(2)]))
            name = names[0]
            wide = [w for w, pattern in WIDE.items() if any(pattern.search(n) for n in names)]
            checked += exported and not wide
            continue
        m = INSN.match(line)
        if m is None or name is None:
            continue
        mnemonic, operands = m.group(1), m.group(2)
        if mnemonic in PREFIXES:
            mnemonic, _, operands = operands.partition(" ")
        for w in wide:
            wide_use[w] += REGISTER[w] in operands
        if exported and not wide and beyond_baseline(mnemonic, operands) and name not in leaks:
            leaks[name] = f"{mnemonic} {operands}".strip()
    ok = True
    for w, n in wide_use.items():
        if n == 0:
            print(f"{path}: no function of vk::cpu::{w} uses {REGISTER[w]}: is that copy there?")
            ok = False
    shown = subprocess.run(["c++filt"], input="\n".join(sorted(leaks)), capture_output=True,
                           text=True).stdout.splitlines()
    for demangled, mangled in zip(shown, sorted(leaks)):
        print(f"{path}: {demangled}: {leaks[mangled]}")
        ok = False
    if ok:
        print(f"{path}: {checked} global functions outside the wide copies, all baseline x86-64 "
              f"({wide_use['avx2']} ymm and {wide_use['avx512']} zmm instructions within them)")
    return ok


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    sys.exit(0 if all([check(p) for p in sys.argv[1:]]) else 1)

"""The sandbox's socket wall: a seccomp program that makes ``socket()`` fail inside.

A read-only bind mount does not stop ``connect()`` to a Unix socket in the workspace (the kernel
asks for write permission on the socket file, which a read-only mount does not take away), and
an unshared network namespace only hides the network and abstract Unix sockets. So no socket is
ever made in the sandbox: ``socket()`` fails with EACCES for every address family (a read-only
command needs none; glibc falls back to files when its nscd socket cannot be made).
``socketpair()`` stays allowed: both ends are inside. ``io_uring_setup()`` fails too, since an
io_uring can make sockets without the ``socket()`` system call.

The program is classic BPF, nine instructions, assembled here with ``struct`` instead of a
libseccomp binding: the official Python bindings are not on PyPI (only Debian's python3-seccomp,
for the system Python), the PyPI ctypes wrappers are unmaintained, and the filter is small enough
to read line by line. bubblewrap loads it (``--seccomp FD``) just before it runs the command.
"""

from __future__ import annotations

import platform
import struct

__all__ = ["socket_filter"]

# Classic BPF opcodes (linux/bpf_common.h).
_LD_W_ABS = 0x00 | 0x00 | 0x20  # BPF_LD | BPF_W | BPF_ABS: A = 32-bit word at offset k
_JEQ_K = 0x05 | 0x10 | 0x00  # BPF_JMP | BPF_JEQ | BPF_K: if A == k skip jt else skip jf
_JGE_K = 0x05 | 0x30 | 0x00  # BPF_JMP | BPF_JGE | BPF_K: if A >= k skip jt else skip jf
_RET_K = 0x06 | 0x00  # BPF_RET | BPF_K: return k

# seccomp return values (linux/seccomp.h).
_ALLOW = 0x7FFF0000
_KILL_PROCESS = 0x80000000
_ERRNO = 0x00050000
_EACCES = 13

# struct seccomp_data: int nr at offset 0, __u32 arch at offset 4.
_NR_OFFSET = 0
_ARCH_OFFSET = 4

#: machine -> (AUDIT_ARCH_*, socket, io_uring_setup, first number that is not this ABI's).
#: x86_64's x32 ABI numbers have bit 30 set; arm64 has no second ABI under its own arch value.
_ARCHES: dict[str, tuple[int, int, int, int]] = {
    "x86_64": (0xC000003E, 41, 425, 0x40000000),
    "aarch64": (0xC00000B7, 198, 425, 0xFFFFFFFF),
}


def _op(code: int, jt: int, jf: int, k: int) -> bytes:
    """One struct sock_filter: __u16 code, __u8 jt, __u8 jf, __u32 k (native byte order)."""
    return struct.pack("=HBBI", code, jt, jf, k)


def socket_filter(machine: str | None = None) -> bytes | None:
    """The filter for this machine's architecture, or None where planbook has none (the
    caller then refuses to start a sandbox rather than start one without the wall)."""
    known = _ARCHES.get(machine or platform.machine())
    if known is None:
        return None
    arch, nr_socket, nr_io_uring_setup, foreign_abi = known
    return b"".join(
        [
            _op(_LD_W_ABS, 0, 0, _ARCH_OFFSET),  # 0: A = arch
            _op(_JEQ_K, 0, 6, arch),  # 1: A == arch ? 2 : 8 (kill)
            _op(_LD_W_ABS, 0, 0, _NR_OFFSET),  # 2: A = system call number
            _op(_JGE_K, 4, 0, foreign_abi),  # 3: A >= foreign ABI ? 8 (kill) : 4
            _op(_JEQ_K, 2, 0, nr_socket),  # 4: A == socket ? 7 (fail) : 5
            _op(_JEQ_K, 1, 0, nr_io_uring_setup),  # 5: A == io_uring_setup ? 7 (fail) : 6
            _op(_RET_K, 0, 0, _ALLOW),  # 6: allow
            _op(_RET_K, 0, 0, _ERRNO | _EACCES),  # 7: fail with EACCES
            _op(_RET_K, 0, 0, _KILL_PROCESS),  # 8: kill the process
        ]
    )

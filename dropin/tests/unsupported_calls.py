"""Calls the drop-in library does not cover: each fails the ibverbs way
(NULL or a nonzero status, errno EOPNOTSUPP) with one stderr line naming the
function, and the process goes on. Prints "RESULT name value errno" lines
for unsupported_test.sh to check."""
import ctypes
import sys

lib = ctypes.CDLL("libibverbs.so.1", use_errno=True)

lib.ibv_import_device.restype = ctypes.c_void_p
lib.ibv_import_device.argtypes = [ctypes.c_int]
ctypes.set_errno(0)
ptr = lib.ibv_import_device(3)
print(f"RESULT ibv_import_device {ptr} {ctypes.get_errno()}", flush=True)

# Through pyverbs: the header's inline ibv_create_cq_ex reaches the
# verbs_context entry, which covers the standard completion fields but not
# completion timestamps.
try:
    import pyverbs.enums as e
    from pyverbs.cq import CQEX, CqInitAttrEx
    from pyverbs.device import Context
    from pyverbs.pyverbs_error import PyverbsRDMAError
except ImportError as err:
    print(f"pyverbs missing ({err}): apt-get install python3-pyverbs")
    sys.exit(1)
ctx = Context(name="sim0")
try:
    CQEX(ctx, CqInitAttrEx(
        cqe=16, wc_flags=e.IBV_WC_EX_WITH_COMPLETION_TIMESTAMP))
    print("RESULT ibv_create_cq_ex created 0", flush=True)
except PyverbsRDMAError as err:
    print(f"RESULT ibv_create_cq_ex None {err.error_code}", flush=True)

# The standard fields are covered: this one is made.
cq = CQEX(ctx, CqInitAttrEx(cqe=16, wc_flags=e.IBV_WC_STANDARD_FLAGS))
print(f"RESULT ibv_create_cq_ex_standard made {cq is not None}", flush=True)

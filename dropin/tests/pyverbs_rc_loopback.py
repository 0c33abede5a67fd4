"""An RC pair between sim0 and sim1 through Debian's pyverbs, which loads
whatever libibverbs.so.1 LD_LIBRARY_PATH finds first (the drop-in here).

Checks send/recv, RDMA write, RDMA read and a write with a bad rkey, with the
completion statuses, opcodes, byte counts and the bytes in memory.
Exit status 0 when every check held; each failure is printed.
"""
import os
import sys
import time

try:
    import pyverbs.enums as e
    from pyverbs.addr import AHAttr, GlobalRoute
    from pyverbs.cq import CQ, CompChannel
    from pyverbs.device import Context
    from pyverbs.mr import MR
    from pyverbs.pd import PD
    from pyverbs.qp import QP, QPAttr, QPCap, QPInitAttr
    from pyverbs.wr import SGE, RecvWR, SendWR
except ImportError as err:
    print(f"FAIL: pyverbs is missing ({err}); install it with: "
          "apt-get install python3-pyverbs")
    sys.exit(1)

SIZE = 4096
ACCESS = (e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE |
          e.IBV_ACCESS_REMOTE_READ)
failures = []


def check(cond, what):
    print(("ok: " if cond else "FAIL: ") + what)
    if not cond:
        failures.append(what)


class Side:
    def __init__(self, name, with_channel=False):
        self.ctx = Context(name=name)
        self.pd = PD(self.ctx)
        self.channel = CompChannel(self.ctx) if with_channel else None
        self.cq = CQ(self.ctx, 16, None, self.channel, 0)
        self.mr = MR(self.pd, SIZE, ACCESS)
        cap = QPCap(max_send_wr=16, max_recv_wr=16, max_send_sge=1,
                    max_recv_sge=1)
        init = QPInitAttr(qp_type=e.IBV_QPT_RC, scq=self.cq, rcq=self.cq,
                          cap=cap)
        self.qp = QP(self.pd, init)
        self.gid = self.ctx.query_gid(1, 0)

    def connect(self, peer):
        attr = QPAttr()
        attr.qp_access_flags = ACCESS
        attr.path_mtu = e.IBV_MTU_1024
        attr.dest_qp_num = peer.qp.qp_num
        attr.rq_psn = 0
        attr.sq_psn = 0
        attr.max_dest_rd_atomic = 1
        attr.max_rd_atomic = 1
        attr.min_rnr_timer = 12
        attr.timeout = 14
        attr.retry_cnt = 7
        attr.rnr_retry = 7
        gr = GlobalRoute(dgid=peer.gid, sgid_index=0)
        attr.ah_attr = AHAttr(gr=gr, is_global=1, port_num=1)
        self.qp.to_rts(attr)


def poll(cq, seconds=10):
    """The next completion of `cq`, or None after `seconds`."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        n, wcs = cq.poll(num_entries=1)
        if n > 0:
            return wcs[0]
    return None


def post_send(side, wr_id, opcode, offset, length, rkey=None, raddr=None):
    sge = SGE(side.mr.buf + offset, length, side.mr.lkey)
    wr = SendWR(wr_id=wr_id, opcode=opcode, num_sge=1, sg=[sge],
                send_flags=e.IBV_SEND_SIGNALED)
    if rkey is not None:
        wr.set_wr_rdma(rkey, raddr)
    side.qp.post_send(wr)


def loaded_libibverbs():
    """The path of the libibverbs.so.1 this process mapped."""
    with open("/proc/self/maps") as maps:
        for line in maps:
            if line.rstrip().endswith("/libibverbs.so.1"):
                return line.split()[-1]
    return None


def main():
    lib = loaded_libibverbs()
    expected = os.environ.get("VERBSIM_DROPIN_DIR")
    if expected is not None:
        want = os.path.realpath(os.path.join(expected, "libibverbs.so.1"))
        check(lib is not None and os.path.realpath(lib) == want,
              f"pyverbs runs on the drop-in library ({lib})")
    client, server = Side("sim0"), Side("sim1", with_channel=True)
    client.connect(server)
    server.connect(client)
    check(client.qp.qp_state == e.IBV_QPS_RTS, "client QP in RTS")

    # send/recv: 64 bytes land at the start of the server's buffer.
    # The server waits for it through its completion channel (a blocking
    # ibv_get_cq_event on the channel's fd), then polls.
    msg = bytes(range(64))
    server.cq.req_notify()
    server.qp.post_recv(RecvWR(wr_id=7, num_sge=1,
                               sg=[SGE(server.mr.buf, 256, server.mr.lkey)]))
    client.mr.write(msg, len(msg), 0)
    post_send(client, 1, e.IBV_WR_SEND, 0, len(msg))
    wc = poll(client.cq)
    check(wc is not None and wc.status == e.IBV_WC_SUCCESS and
          wc.opcode == e.IBV_WC_SEND and wc.wr_id == 1,
          f"send completes SUCCESS on the client ({wc and wc.status})")
    server.channel.get_cq_event(server.cq)
    server.cq.ack_events(1)
    print("ok: the server's channel delivered the recv's event")
    wc = poll(server.cq, 0.5)
    check(wc is not None and wc.status == e.IBV_WC_SUCCESS and
          wc.opcode == e.IBV_WC_RECV and wc.wr_id == 7 and
          wc.byte_len == len(msg) and wc.qp_num == server.qp.qp_num,
          f"recv completes SUCCESS with byte_len 64 ({wc and wc.byte_len})")
    check(server.mr.read(len(msg), 0) == msg, "received bytes equal sent")

    # RDMA write of 1000 bytes to the server's offset 1024.
    data = bytes((i * 7 + 3) % 256 for i in range(1000))
    client.mr.write(data, len(data), 1024)
    post_send(client, 2, e.IBV_WR_RDMA_WRITE, 1024, len(data),
              server.mr.rkey, server.mr.buf + 1024)
    wc = poll(client.cq)
    check(wc is not None and wc.status == e.IBV_WC_SUCCESS and
          wc.opcode == e.IBV_WC_RDMA_WRITE,
          f"RDMA write completes SUCCESS ({wc and wc.status})")
    check(server.mr.read(len(data), 1024) == data,
          "written bytes are in the server's memory")
    check(poll(server.cq, 0.2) is None, "a write consumes no receive")

    # RDMA read of 1500 bytes (two packets at MTU 1024) from offset 2048.
    data = bytes((i * 13 + 1) % 256 for i in range(1500))
    server.mr.write(data, len(data), 2048)
    post_send(client, 3, e.IBV_WR_RDMA_READ, 2048, len(data),
              server.mr.rkey, server.mr.buf + 2048)
    wc = poll(client.cq)
    check(wc is not None and wc.status == e.IBV_WC_SUCCESS and
          wc.opcode == e.IBV_WC_RDMA_READ and wc.byte_len == len(data),
          f"RDMA read completes SUCCESS with byte_len 1500 "
          f"({wc and wc.byte_len})")
    check(client.mr.read(len(data), 2048) == data,
          "read bytes are in the client's memory")

    # A write with an rkey nobody registered: the responder NAKs it, the
    # requester completes it with REM_ACCESS_ERR (IBA 9.7.5.2.4).
    before = server.mr.read(16, 3072)
    client.mr.write(b"\xee" * 16, 16, 3072)
    post_send(client, 4, e.IBV_WR_RDMA_WRITE, 3072, 16,
              server.mr.rkey ^ 0x5a5a00, server.mr.buf + 3072)
    wc = poll(client.cq)
    check(wc is not None and wc.status == e.IBV_WC_REM_ACCESS_ERR and
          wc.wr_id == 4,
          f"bad rkey completes REM_ACCESS_ERR ({wc and wc.status})")
    check(server.mr.read(16, 3072) == before,
          "the bad-rkey write left the server's memory alone")

    print(f"pyverbs checks: {len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

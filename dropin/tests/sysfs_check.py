"""Checks the sysfs view of the sim's devices against ibv_devinfo -v.

Run with the drop-in libibverbs on LD_LIBRARY_PATH, libverbsim_sysfs.so
preloaded and VERBSIM_SYSFS naming the tree (sysfs_test.sh, or under
`verbsim exec`). Every device ibv_devinfo lists must have its files, with
the values ibv_devinfo prints, in the kernel's formats; the uverbs nodes
must be character devices a user may open; the netdev must be lo, as
`ls` and `ip -j addr` (what rdma-core's tests/base.py runs) see it; and the
rest of /sys must be the machine's. Prints "ok: ..." per check; exits 1
after the first failing one.
"""
import ctypes
import ipaddress
import json
import os
import re
import stat
import subprocess
import sys

NODE_TYPES = {"InfiniBand": "1: CA", "iWARP": "4: RNIC"}
PORT_STATES = {1: "DOWN", 2: "INIT", 3: "ARMED", 4: "ACTIVE"}
PHYS_STATES = {2: "Polling", 3: "Disabled", 5: "LinkUp"}
WIDTHS = {"1X": 1, "2X": 2, "4X": 4, "8X": 8, "12X": 12}


def fail(what):
    print("FAIL: " + what)
    sys.exit(1)


def read(path):
    with open(path) as f:
        return f.read()


def expect(path, want):
    try:
        got = read(path)
    except OSError as e:
        fail("%s: %s" % (path, e))
    if got != want:
        fail("%s says %r, want %r" % (path, got, want))


def run(*argv):
    return subprocess.run(argv, check=True, capture_output=True,
                          text=True, timeout=30).stdout


def field(text, name, default=None):
    m = re.search(r"^\s*%s:\s+(.*)$" % re.escape(name), text, re.M)
    if not m:
        if default is not None:
            return default
        fail("ibv_devinfo -v prints no %s" % name)
    return m.group(1).strip()


def number(text):
    """The number in '4X (2)' or 'PORT_ACTIVE (4)': the one in brackets."""
    m = re.search(r"\((\d+)\)", text)
    return int(m.group(1)) if m else int(text, 0)


def check_device(name, info):
    ib = "/sys/class/infiniband/" + name
    real = "/sys/devices/verbsim/%s/infiniband/%s" % (name, name)
    if os.path.realpath(ib) != real or run("realpath", ib).strip() != real:
        fail("%s resolves to %s (os) and %s (realpath), want %s"
             % (ib, os.path.realpath(ib), run("realpath", ib).strip(), real))
    transport = field(info, "transport").split()[0]
    expect(ib + "/node_type", NODE_TYPES[transport] + "\n")
    for f in ("node_guid", "sys_image_guid", "fw_ver"):
        expect(ib + "/" + f, field(info, f) + "\n")
    # The HCA directory: what UCX reads (vendor, device, numa_node).
    hca = ib + "/device"
    if int(read(hca + "/vendor"), 16) != int(field(info, "vendor_id"), 16):
        fail("%s/vendor is not vendor_id %s" % (hca, field(info, "vendor_id")))
    if int(read(hca + "/device"), 16) != int(field(info, "vendor_part_id")):
        fail("%s/device is not vendor_part_id" % hca)
    expect(hca + "/numa_node", "-1\n")
    print("ok: %s: node_type, GUIDs, fw_ver, vendor, device, numa_node"
          % name)

    ports = info.split("\t\tport:\t")[1:]
    if len(ports) != int(field(info, "phys_port_cnt")):
        fail("%s: %d port sections for phys_port_cnt %s"
             % (name, len(ports), field(info, "phys_port_cnt")))
    for text in ports:
        port = int(text.split("\n", 1)[0])
        p = "%s/ports/%d" % (ib, port)
        s = number(field(text, "state"))
        expect(p + "/state", "%d: %s\n" % (s, PORT_STATES[s]))
        # ibv_devinfo prints the physical state of InfiniBand-transport
        # devices only (not siw's): then the file is held to its format.
        shown_ps = field(text, "phys_state", "")
        ps = number(shown_ps) if shown_ps else int(
            read(p + "/phys_state").split(":")[0])
        expect(p + "/phys_state", "%d: %s\n" % (ps, PHYS_STATES[ps]))
        link = field(text, "link_layer")
        expect(p + "/link_layer", link + "\n")
        expect(p + "/lid", "%#x\n" % int(field(text, "port_lid")))
        expect(p + "/sm_lid", "%#x\n" % int(field(text, "sm_lid")))
        expect(p + "/lmc", "%d\n" % int(field(text, "port_lmc"), 16))
        expect(p + "/sm_sl", "%d\n" % int(field(text, "sm_sl")))
        expect(p + "/cap_mask", field(text, "port_cap_flags") + "\n")
        width = field(text, "active_width").split()[0]
        lane = float(field(text, "active_speed").split()[0])
        rate = read(p + "/rate")
        m = re.match(r"^(\d+(\.5)?) Gb/sec \((\d+)X [A-Z0-9]+\)\n$", rate)
        if (not m or float(m.group(1)) != WIDTHS[width] * lane or
                "%sX" % m.group(3) != width):
            fail("%s/rate is %r for width %s, %s Gb/s a lane"
                 % (p, rate, width, lane))
        gids = int(field(text, "gid_tbl_len"))
        if len(os.listdir(p + "/gids")) != gids:
            fail("%s/gids holds %d entries, gid_tbl_len %d"
                 % (p, len(os.listdir(p + "/gids")), gids))
        shown = re.findall(r"GID\[\s*(\d+)\]:\s+([0-9a-f:.]+), (RoCE v2|RoCE v1|IB)",
                           text)
        if not shown:
            fail("ibv_devinfo shows no GID of %s port %d" % (name, port))
        for index, gid, kind in shown:
            expect("%s/gids/%s" % (p, index),
                   ipaddress.ip_address(gid).exploded + "\n")
            expect("%s/gid_attrs/types/%s" % (p, index),
                   ("RoCE v2" if kind == "RoCE v2" else "IB/RoCE v1") + "\n")
            if link == "Ethernet":
                expect("%s/gid_attrs/ndevs/%s" % (p, index), "lo\n")
        for i in range(int(field(text, "pkey_tbl_len"))):
            expect("%s/pkeys/%d" % (p, i), "0xffff\n")
        print("ok: %s port %d: state, phys_state, link_layer, rate, lid, "
              "sm_lid, lmc, sm_sl, cap_mask, %d GIDs (%d set), pkeys"
              % (name, port, gids, len(shown)))

    # The netdev, as rdma-core's tests/base.py finds it.
    net = run("ls", ib + "/device/net/").split("\n")[0]
    if net != "lo":
        fail("ls %s/device/net/ says %r, want lo" % (ib, net))
    addr = json.loads(run("ip", "-j", "addr", "show", net))
    if addr[0]["addr_info"][0]["local"] != "127.0.0.1":
        fail("ip -j addr show lo: %r" % addr[0]["addr_info"][0])
    expect(ib + "/parent", "lo\n")
    print("ok: %s: netdev lo (ls device/net, ip -j addr: 127.0.0.1)" % name)

    # The library's own reader of these files.
    lib = ctypes.CDLL("libibverbs.so.1", use_errno=True)
    buf = ctypes.create_string_buffer(64)
    n = lib.ibv_read_sysfs_file(ib.encode(), b"node_guid", buf, 64)
    if n != 19 or buf.value.decode() != field(info, "node_guid"):
        fail("ibv_read_sysfs_file(%s, node_guid) = %d, %r"
             % (ib, n, buf.value))
    print("ok: %s: ibv_read_sysfs_file" % name)


def check_uverbs(names):
    """/sys/class/infiniband_verbs and /dev/infiniband, as UCX looks."""
    cls = "/sys/class/infiniband_verbs"
    expect(cls + "/abi_version", "6\n")
    nodes = sorted(e for e in os.listdir(cls) if e.startswith("uverbs"))
    seen = []
    for node in nodes:
        n = int(node[len("uverbs"):])
        seen.append(read("%s/%s/ibdev" % (cls, node)).strip())
        expect("%s/%s/dev" % (cls, node), "231:%d\n" % (192 + n))
        dev = "/dev/infiniband/" + node
        st = os.stat(dev)
        if (not stat.S_ISCHR(st.st_mode) or os.major(st.st_rdev) != 231 or
                os.minor(st.st_rdev) != 192 + n):
            fail("%s: mode %o rdev %d:%d" % (dev, st.st_mode,
                                             os.major(st.st_rdev),
                                             os.minor(st.st_rdev)))
        if not os.access(dev, os.R_OK | os.W_OK):
            fail("%s is not readable and writable" % dev)
        shown = run("stat", "-c", "%F %t:%T", dev).strip()
        if shown != "character special file e7:%x" % (192 + n):
            fail("stat %s says %r" % (dev, shown))
    if sorted(seen) != sorted(names):
        fail("the uverbs nodes name %s, ibv_devinfo lists %s" % (seen, names))
    print("ok: %s: ibdev, dev, character devices 231:192+ for %s"
          % (" ".join(nodes), " ".join(seen)))


def main():
    text = run("ibv_devinfo", "-v")
    blocks = re.split(r"^hca_id:\s+", text, flags=re.M)[1:]
    if not blocks:
        fail("ibv_devinfo lists no device: %r" % text)
    names = []
    for block in blocks:
        name = block.split("\n", 1)[0].strip()
        names.append(name)
        check_device(name, block)
    if sorted(os.listdir("/sys/class/infiniband")) != sorted(names):
        fail("/sys/class/infiniband lists %s, ibv_devinfo %s"
             % (os.listdir("/sys/class/infiniband"), names))
    check_uverbs(names)
    # Everything else under /sys is the machine's own.
    for path in ("/sys/class/net/lo", "/sys/devices/system/cpu"):
        if not os.path.isdir(path):
            fail("%s is gone under the view" % path)
    print("ok: /sys/class/net/lo and /sys/devices/system/cpu are the "
          "machine's")


if __name__ == "__main__":
    main()

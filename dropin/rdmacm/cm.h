// The drop-in librdmacm.so.1: the rdma_cm objects handed to programs and the
// connection manager behind them (docs/drop-in.md, "librdmacm").
//
// The library sits on the public ibverbs API (the drop-in libibverbs.so.1 at
// run time), exactly as rdma-core's librdmacm does, so the header's inline
// rdma_post_* and rdma_get_*_comp dispatch into the sim. What the kernel's
// IB CM does on the wire (REQ/REP/RTU/REJ/DREQ/DREP, SIDR REQ/REP) travels
// here as fixed-size messages over UNIX SOCK_SEQPACKET sockets in the
// abstract namespace, one listening socket per (address, port) and one
// stream per connection, so two processes of one sim fabric can connect.
#ifndef VERBSIM_DROPIN_RDMACM_CM_H_
#define VERBSIM_DROPIN_RDMACM_CM_H_

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include <chrono>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <vector>

#include "core/cm_timing.h"

namespace verbsim::rdmacm {

// "librdmacm (verbsim): <message>" on stderr, one line.
void Warn(const std::string& message);
// Sets errno and returns -1, as every failing rdma_* call does.
int Fail(int err);
// Whether VERBSIM_DEBUG is set (then each CM message is logged).
bool Debug();

// ---- Nodes: the sim devices of this process and their addresses ----------

struct Node {
  uint32_t ip = 0;        // host order: the fabric's base + i for node i
  ibv_context* verbs = nullptr;
  ibv_gid gid{};          // GID index 0, ::ffff:<ip>
  ibv_pd* default_pd = nullptr;  // rdma_create_qp/ep with no PD
  uint8_t max_rd_atom = 0;       // max_qp_rd_atom
  uint8_t max_init_rd_atom = 0;  // max_qp_init_rd_atom
  ibv_mtu active_mtu = IBV_MTU_1024;
};

// The nodes this process owns (all of them in-process; with VERBSIM_UDP the
// ones in its local= list), opened on first use. Empty after one line on
// stderr when there are none.
const std::vector<Node*>& LocalNodes();
// The local node with this IPv4 address (host order); 127.0.0.1, unless a
// node has it, is the first local node. Null when the address is not one of
// this process.
Node* LocalNodeOf(uint32_t ip);
// Whether the address names a node of the fabric (local or in another
// process).
bool FabricHasIp(uint32_t ip);
// The namespace of the CM sockets: the UDP base port when VERBSIM_UDP is set
// (shared by the processes of one fabric), else this process alone.
const std::string& SocketNamespace();
// The IPv4-mapped GID of a sim node's address (host order).
ibv_gid GidOfIp(uint32_t ip);
// The PD rdma_create_qp uses when given none (the device's, shared by the
// ids on it); DefaultPdLocked with CmMutex held.
ibv_pd* DefaultPd(Node* node);
ibv_pd* DefaultPdLocked(Node* node);
// The CM's timeouts and retries of this process (core/cm_timing.h), read
// with the nodes.
const CmTiming& Timing();
// Whether a process owns the fabric node with this address: each process
// announces its nodes with one abstract socket per node (nodes.cc), as a
// host answers ARP for its address.
bool NodePresent(uint32_t ip);

// fork(): the CM's locks are held across it; in a child whose fabric spans
// processes (VERBSIM_UDP) the nodes are opened again and the service thread
// started again on first use, on the child's own fabric (fork.cc).
void RegisterForkHandlers();
void LockNodesForFork();
void UnlockNodesAfterFork();
void ForgetNodesAfterFork();
void ForgetServiceAfterFork();

// ---- Events and channels ---------------------------------------------------

// Room for any private data a program can give (rdma_conn_param's length
// is a u8); InfiniBand's CM takes at most 196 of it, iWARP's MPA more.
constexpr int kMaxPrivateData = 256;

struct Event {
  rdma_cm_event ev;  // first
  uint8_t private_data[kMaxPrivateData];
};

// A channel lives while the table of live channels or a thread inside
// rdma_get_cm_event holds it (channel.cc): destroying it under a blocked
// reader never frees what that reader uses.
struct Channel {
  rdma_event_channel ch;  // first: { int fd }, the read end of a pipe
  int write_fd = -1;
  std::mutex mu;
  std::deque<Event*> queue;
  bool destroyed = false;  // under mu: events are dropped, not queued
  ~Channel();
};

Channel* NewChannel();  // null with errno on failure
// rdma_destroy_event_channel: the channel leaves the table, its queued
// events are freed and its write end is closed (a blocked reader sees the
// end of the pipe); the rest goes when the last reader leaves.
void DeleteChannel(Channel* channel);
// Queues an event and makes the channel's fd readable.
void Post(Channel* channel, Event* event);
// Takes the next event: blocks unless the fd is O_NONBLOCK (then EAGAIN).
int Take(Channel* channel, Event** event);
// Moves the events queued on `from` that are about `id` (their id, or their
// listen_id for a CONNECT_REQUEST) to the end of `to`, in order, as the
// kernel's ucma_move_events does for rdma_migrate_id. A moved event leaves a
// hole in `from` for the byte already in its pipe, which Take skips.
void MoveEvents(Channel* from, Channel* to, const rdma_cm_id* id);

// ---- Ids -------------------------------------------------------------------

enum class State {
  kIdle,
  kBound,
  kAddrQuery,        // rdma_resolve_addr waiting for the node's owner
  kAddrResolved,
  kRouteResolved,
  kListening,
  kConnecting,       // REQ sent
  kRequested,        // passive: REQ received, not yet accepted
  kConnectResponse,  // REP received for a QP the program made (rdma_establish)
  kAccepted,         // passive: REP sent, waiting for RTU
  kEstablished,
  kDisconnecting,    // DREQ sent
  kDisconnected,
  kRejected,
  kTimedOut,         // the CM gave up: UNREACHABLE -ETIMEDOUT was reported
};

using Clock = std::chrono::steady_clock;

// The peer's side of a connection, from its REQ or REP.
struct Peer {
  uint32_t qpn = 0;
  uint32_t psn = 0;
  uint32_t qkey = 0;
  ibv_gid gid{};
  uint8_t responder_resources = 0;
  uint8_t initiator_depth = 0;
  uint8_t retry_count = 7;
  uint8_t rnr_retry_count = 7;
};

struct Msg;

// A multicast group an id joined (rdma_join_multicast(3)).
struct McJoin {
  sockaddr_in addr{};
  ibv_gid mgid{};
  void* context = nullptr;
  ibv_qp* attached = nullptr;  // the id's QP, attached to the group
  bool ip_joined = false;      // a full member: the device joined at IP level
};

struct Id {
  rdma_cm_id id;  // first
  bool sync = false;       // made with no channel: calls wait for their event
  Channel* own = nullptr;  // the private channel of a sync id
  State state = State::kIdle;
  Node* node = nullptr;   // null for a wildcard bind
  sockaddr_in src{};
  sockaddr_in dst{};
  ibv_sa_path_rec path{};
  // Listening: one socket per local address it listens on.
  std::vector<int> listen_fds;
  // rdma_create_ep on a passive address keeps these for rdma_get_request.
  bool has_ep_attr = false;
  ibv_qp_init_attr ep_attr{};
  ibv_pd* ep_pd = nullptr;
  // A connection: its socket, our side and the peer's.
  int conn_fd = -1;
  uint32_t psn = 0;
  uint8_t responder_resources = 0;
  uint8_t initiator_depth = 0;
  uint8_t retry_count = 7;
  uint8_t rnr_retry_count = 7;
  // The QP's local ACK timeout (RDMA_OPTION_ID_ACK_TIMEOUT), when set.
  bool ack_timeout_set = false;
  uint8_t ack_timeout = 0;
  uint32_t qp_num = 0;    // the QP on the wire (id->qp's, or conn_param's)
  Peer peer;
  bool has_peer = false;  // its REQ or REP has arrived
  bool made_cqs = false;  // rdma_create_qp made the CQs and channels
  bool disconnect_reported = false;  // DISCONNECTED went out (only once)
  // The peer's DREQ came and our DREP waits for the consumer's
  // rdma_disconnect or rdma_destroy_id (cm.c cm_dreq_handler leaves the id
  // in DREQ_RCVD; cma.c rdma_disconnect sends the DREP).
  bool drep_owed = false;
  bool disconnect_waited = false;    // a sync rdma_disconnect took it
  Event* last = nullptr;  // a sync id's event, freed with the next one
  // The CM's retry timer (cm.c: a MAD's timeout_ms and retries), run by the
  // service thread: armed for a REQ, SIDR REQ or REP waiting for its answer
  // and for an address query.
  Clock::time_point deadline{};
  bool timer_armed = false;
  int tries_left = 0;      // retransmissions still to send
  int64_t try_ms = 0;      // the wait of one try; an MRA lengthens it
  bool mra_received = false;
  Msg* resend = nullptr;   // the message a retry sends again
  // rdma_resolve_addr: when it gives up (timeout_ms after the call), and
  // the state to return to then.
  Clock::time_point resolve_deadline{};
  State resolve_from = State::kIdle;
  bool passive = false;    // made by a CONNECT_REQUEST
  // From the peer's REQ: the response timeout and retries its REP uses.
  uint8_t req_response_timeout = 20;
  uint8_t req_max_retries = 15;
  std::vector<McJoin> groups;  // rdma_join_multicast; left on destroy
};

// Leaves every group `id` joined (rdma_destroy_id). Under CmMutex.
void LeaveAllGroups(Id* id);

inline Id* IdOf(rdma_cm_id* id) { return reinterpret_cast<Id*>(id); }

// The lock over every Id's state and the socket table; taken by the calls
// and by the service thread, never while waiting for an event.
std::mutex& CmMutex();

// A new event about `id` (status 0 for success), private data copied in;
// the caller fills the rest of ev.param and hands it to Deliver.
Event* NewEvent(Id* id, rdma_cm_event_type type, int status,
                const void* private_data = nullptr, int private_data_len = 0);
// Posts the event to the channel of `owner` (the id itself, or the listener
// for a CONNECT_REQUEST).
void Deliver(Id* owner, Event* event);
// A sync id waits for its next event; fails (errno from the event, as
// librdmacm's ucma_complete) when it is an error event. The event stays in
// id->event until the next one.
int WaitSync(Id* id);

// Fills in the attributes that take `id`'s QP to attr->qp_state (the body of
// rdma_init_qp_attr). EINVAL when the state needs a peer not yet known.
int InitQpAttr(Id* id, ibv_qp_attr* attr, int* mask);
// Moves id->qp through the given states with InitQpAttr; errno on failure.
int MoveQp(Id* id, std::initializer_list<ibv_qp_state> states);

// ---- The wire: CM messages between ids -------------------------------------

enum class MsgType : uint32_t {
  kReq = 1,
  kRep,
  kRtu,
  kRej,
  kDreq,
  kDrep,
  kSidrReq,
  kSidrRep,
  kMra,
};

struct Msg {
  MsgType type;
  uint32_t qpn;
  uint32_t psn;
  uint32_t qkey;
  uint32_t status;       // REJ reason, SIDR REP status, MRA service timeout
  uint32_t src_ip;       // network order
  uint32_t dst_ip;
  uint16_t src_port;     // network order
  uint16_t dst_port;
  uint8_t gid[16];
  uint8_t responder_resources;
  uint8_t initiator_depth;
  uint8_t retry_count;
  uint8_t rnr_retry_count;
  uint8_t cm_response_timeout;  // REQ: the sender's (its REP's try)
  uint8_t max_cm_retries;       // REQ: the sender's (its REP's retries)
  uint8_t private_data_len;
  uint8_t private_data[kMaxPrivateData];
};

// Reserves the listening socket(s) of a bound id (EADDRINUSE when another id
// has the address and port); Listen starts accepting on them.
int BindSockets(Id* id);
int ListenSockets(Id* id, int backlog);
// Opens the connection to the listener at id->dst; errno ECONNREFUSED when
// nobody listens there.
int ConnectSocket(Id* id);
// Sends one message on id's connection; false when the peer is gone.
bool SendMsg(Id* id, const Msg& msg);
// Fills the parts of a message every sender fills (addresses, GID).
Msg MsgFrom(const Id* id, MsgType type);
// Closes id's sockets and forgets them, and stops its timer (under
// CmMutex).
void CloseSockets(Id* id);
// The service thread's timer for `id` (under CmMutex): ArmTimer runs OnTimer
// once `after_ms` have passed, unless stopped or armed again meanwhile.
void ArmTimer(Id* id, int64_t after_ms);
void StopTimer(Id* id);
// Starts the CM's retries of `msg`, just sent: `retries` more sends, one
// every `try_ms`, then OnTimer's verdict (connect.cc).
void StartRetries(Id* id, const Msg& msg, int retries, int64_t try_ms);
// A timer ran out (connect.cc; under CmMutex).
void OnTimer(Id* id);
// An address query's timer ran out (ids.cc; under CmMutex).
void OnAddrTimer(Id* id);
// Handles a message (or the loss of the connection, when msg is null) that
// arrived on id's connection; under CmMutex (connect.cc).
void OnMessage(Id* id, const Msg* msg);
// A REQ or SIDR REQ on a connection accepted by `listener` (connect.cc);
// returns the new id that owns the connection, or null when refused.
Id* OnRequest(Id* listener, int fd, const Msg& msg);
// Makes a new id with the given channel (null: sync), as rdma_create_id.
Id* NewId(rdma_event_channel* channel, void* context, rdma_port_space ps,
          ibv_qp_type qp_type);
void FreeId(Id* id);
// Gives an id its device (the node's context, port 1, its RDMA read limits).
void AttachNode(Id* id, Node* node);
// Fills id->route's addresses and GIDs from id->src, id->dst and the node.
void FillRoute(Id* id);
// The path record of a resolved route.
void FillPath(Id* id);
// An address handle toward the peer (its GID; RoCE needs no LID).
ibv_ah_attr AhToPeer(const Id* id);
// The IPv4 address in a sockaddr; EAFNOSUPPORT (with a line on stderr) for
// another family, which this library does not cover.
int Ipv4Of(const sockaddr* addr, sockaddr_in* out);

// Port-space helpers.
bool IsUd(const Id* id);
// Whether the id's device is iWARP (the sim's siw profile): its connections
// follow the kernel's iw_cm and siw's MPA exchange, not InfiniBand's CM.
bool IsIwarp(const Id* id);
// Copies the private data into a message; EINVAL when longer than `max`.
int SetPrivateData(Msg* msg, const void* data, int len, int max);

}  // namespace verbsim::rdmacm

#endif  // VERBSIM_DROPIN_RDMACM_CM_H_

// Event channels (rdma_create_event_channel(3), rdma_get_cm_event(3)): a
// queue of events and a pipe whose read end is the channel's fd, one byte per
// queued event, so programs can poll(2) the fd or make it non-blocking.
#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "dropin/rdmacm/cm.h"

namespace verbsim::rdmacm {

namespace {

// The live channels, by the pointer programs hold.
struct Channels {
  std::mutex mu;
  std::unordered_map<const Channel*, std::shared_ptr<Channel>> live;
};

Channels& TheChannels() {
  static Channels* c = new Channels;  // outlives every static destructor
  return *c;
}

std::shared_ptr<Channel> Find(const Channel* channel) {
  Channels& t = TheChannels();
  std::lock_guard<std::mutex> lock(t.mu);
  auto it = t.live.find(channel);
  return it == t.live.end() ? nullptr : it->second;
}

// A reader of a channel destroyed under it: librdmacm's read keeps blocking
// (the kernel file stays open under it) until the process ends, and
// programs such as rping rely on it: their event thread is left blocked
// while main tears down and exits.
[[noreturn]] void BlockForever() {
  for (;;) pause();
}

}  // namespace

Channel::~Channel() {
  for (Event* e : queue) delete e;
  close(ch.fd);
  if (write_fd >= 0) close(write_fd);
}

Channel* NewChannel() {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return nullptr;
  auto c = std::make_shared<Channel>();
  c->ch.fd = fds[0];
  c->write_fd = fds[1];
  Channels& t = TheChannels();
  std::lock_guard<std::mutex> lock(t.mu);
  t.live[c.get()] = c;
  return c.get();
}

void DeleteChannel(Channel* channel) {
  std::shared_ptr<Channel> c;
  {
    Channels& t = TheChannels();
    std::lock_guard<std::mutex> lock(t.mu);
    auto it = t.live.find(channel);
    if (it == t.live.end()) return;
    c = std::move(it->second);
    t.live.erase(it);
  }
  std::lock_guard<std::mutex> lock(c->mu);
  c->destroyed = true;
  for (Event* e : c->queue) delete e;
  c->queue.clear();
  close(c->write_fd);  // a blocked reader sees the end of the pipe
  c->write_fd = -1;
}

void Post(Channel* channel, Event* event) {
  std::shared_ptr<Channel> c = Find(channel);
  if (c == nullptr) {
    delete event;  // the channel is gone: nobody can take it
    return;
  }
  std::lock_guard<std::mutex> lock(c->mu);
  if (c->destroyed) {
    delete event;
    return;
  }
  c->queue.push_back(event);
  const char byte = 1;
  while (write(c->write_fd, &byte, 1) < 0 && errno == EINTR) {
  }
}

int Take(Channel* channel, Event** event) {
  // Held for the whole call, so a destroy meanwhile frees nothing used here.
  std::shared_ptr<Channel> c = Find(channel);
  if (c == nullptr) {
    errno = EINVAL;  // no such channel (destroyed before the call)
    return -1;
  }
  char byte;
  for (;;) {
    ssize_t n = read(c->ch.fd, &byte, 1);
    if (n == 1) break;
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return -1;  // EAGAIN on a non-blocking channel
    BlockForever();        // end of file: destroyed under this reader
  }
  std::unique_lock<std::mutex> lock(c->mu);
  if (c->queue.empty()) {
    // Destroyed between the byte and the queue: as at the end of file.
    lock.unlock();
    BlockForever();
  }
  *event = c->queue.front();
  c->queue.pop_front();
  if (*event == nullptr) {
    // The byte of an event moved to another channel (MoveEvents): the
    // next byte is the next event's.
    lock.unlock();
    return Take(channel, event);
  }
  return 0;
}

void MoveEvents(Channel* from, Channel* to, const rdma_cm_id* id) {
  std::shared_ptr<Channel> src = Find(from);
  if (src == nullptr || from == to) return;
  std::vector<Event*> moved;
  {
    std::lock_guard<std::mutex> lock(src->mu);
    for (Event*& e : src->queue) {
      if (e == nullptr) continue;
      const rdma_cm_id* about = e->ev.event == RDMA_CM_EVENT_CONNECT_REQUEST
                                    ? e->ev.listen_id
                                    : e->ev.id;
      if (about != id) continue;
      moved.push_back(e);
      e = nullptr;  // a hole for the byte in the pipe
    }
  }
  for (Event* e : moved) Post(to, e);
}

Event* NewEvent(Id* id, rdma_cm_event_type type, int status,
                const void* private_data, int private_data_len) {
  auto* e = new Event{};
  e->ev.id = &id->id;
  e->ev.event = type;
  e->ev.status = status;
  if (private_data != nullptr && private_data_len > 0) {
    std::memcpy(e->private_data, private_data, private_data_len);
    // rdma_conn_param and rdma_ud_param both begin with these two fields.
    e->ev.param.conn.private_data = e->private_data;
    e->ev.param.conn.private_data_len = static_cast<uint8_t>(private_data_len);
  }
  if (Debug()) {
    Warn(std::string("event ") + rdma_event_str(type) + " status " +
         std::to_string(status) + " on id " +
         std::to_string(reinterpret_cast<uintptr_t>(id)));
  }
  return e;
}

void Deliver(Id* owner, Event* event) {
  Post(owner->sync ? owner->own
                   : reinterpret_cast<Channel*>(owner->id.channel),
       event);
}

int WaitSync(Id* id) {
  Event* e = nullptr;
  if (Take(id->own, &e) != 0) return -1;
  delete id->last;
  id->last = e;
  id->id.event = &e->ev;
  const int status = e->ev.status;
  if (status == 0) return 0;
  // As librdmacm's ucma_complete: a rejection is ECONNREFUSED, otherwise the
  // status is an errno (negative from the kernel's CM).
  if (e->ev.event == RDMA_CM_EVENT_REJECTED) return Fail(ECONNREFUSED);
  return Fail(status < 0 ? -status : status);
}

}  // namespace verbsim::rdmacm

using verbsim::rdmacm::Channel;
using verbsim::rdmacm::Event;
using verbsim::rdmacm::Fail;

extern "C" {

rdma_event_channel* rdma_create_event_channel(void) {
  // Opens the devices and announces this process's nodes, as librdmacm's
  // ucma_init does here.
  verbsim::rdmacm::LocalNodes();
  Channel* c = verbsim::rdmacm::NewChannel();
  return c == nullptr ? nullptr : &c->ch;
}

void rdma_destroy_event_channel(rdma_event_channel* channel) {
  verbsim::rdmacm::DeleteChannel(reinterpret_cast<Channel*>(channel));
}

int rdma_get_cm_event(rdma_event_channel* channel, rdma_cm_event** event) {
  if (channel == nullptr || event == nullptr) return Fail(EINVAL);
  Event* e = nullptr;
  if (verbsim::rdmacm::Take(reinterpret_cast<Channel*>(channel), &e) != 0) {
    return -1;
  }
  *event = &e->ev;
  return 0;
}

int rdma_ack_cm_event(rdma_cm_event* event) {
  if (event == nullptr) return Fail(EINVAL);
  delete reinterpret_cast<Event*>(event);
  return 0;
}

const char* rdma_event_str(rdma_cm_event_type event) {
  switch (event) {
    case RDMA_CM_EVENT_ADDR_RESOLVED: return "RDMA_CM_EVENT_ADDR_RESOLVED";
    case RDMA_CM_EVENT_ADDR_ERROR: return "RDMA_CM_EVENT_ADDR_ERROR";
    case RDMA_CM_EVENT_ROUTE_RESOLVED: return "RDMA_CM_EVENT_ROUTE_RESOLVED";
    case RDMA_CM_EVENT_ROUTE_ERROR: return "RDMA_CM_EVENT_ROUTE_ERROR";
    case RDMA_CM_EVENT_CONNECT_REQUEST: return "RDMA_CM_EVENT_CONNECT_REQUEST";
    case RDMA_CM_EVENT_CONNECT_RESPONSE: return "RDMA_CM_EVENT_CONNECT_RESPONSE";
    case RDMA_CM_EVENT_CONNECT_ERROR: return "RDMA_CM_EVENT_CONNECT_ERROR";
    case RDMA_CM_EVENT_UNREACHABLE: return "RDMA_CM_EVENT_UNREACHABLE";
    case RDMA_CM_EVENT_REJECTED: return "RDMA_CM_EVENT_REJECTED";
    case RDMA_CM_EVENT_ESTABLISHED: return "RDMA_CM_EVENT_ESTABLISHED";
    case RDMA_CM_EVENT_DISCONNECTED: return "RDMA_CM_EVENT_DISCONNECTED";
    case RDMA_CM_EVENT_DEVICE_REMOVAL: return "RDMA_CM_EVENT_DEVICE_REMOVAL";
    case RDMA_CM_EVENT_MULTICAST_JOIN: return "RDMA_CM_EVENT_MULTICAST_JOIN";
    case RDMA_CM_EVENT_MULTICAST_ERROR: return "RDMA_CM_EVENT_MULTICAST_ERROR";
    case RDMA_CM_EVENT_ADDR_CHANGE: return "RDMA_CM_EVENT_ADDR_CHANGE";
    case RDMA_CM_EVENT_TIMEWAIT_EXIT: return "RDMA_CM_EVENT_TIMEWAIT_EXIT";
  }
  return "UNKNOWN EVENT";
}

}  // extern "C"

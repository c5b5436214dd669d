#include "node/dra/board_slice_publisher.h"

namespace tessera::node {

BoardSlicePublisher::BoardSlicePublisher(kube::Client& client,
                                         ResourceSlicePublisherOptions options,
                                         const DeviceBoard& board)
    : board_(board), publisher_(client, std::move(options)) {}

BoardSlicePublisher::~BoardSlicePublisher() {
  Stop();
}

Status BoardSlicePublisher::Start() {
  RETURN_IF_ERROR(publisher_.Start());
  DeviceBoard::Snapshot snap = board_.Get();
  publisher_.Update(snap.gpus);
  stop_ = false;
  follower_ = std::thread([this, seen = snap.version] { Follow(seen); });
  return Status::Ok();
}

void BoardSlicePublisher::Stop() {
  stop_ = true;
  if (follower_.joinable()) follower_.join();
  publisher_.Stop();
}

// The board has no way to wake a waiter for Stop: waits are short so Stop returns promptly.
void BoardSlicePublisher::Follow(uint64_t seen) {
  while (!stop_) {
    if (board_.WaitChange(seen, std::chrono::milliseconds(100)) == seen) continue;
    DeviceBoard::Snapshot snap = board_.Get();
    seen = snap.version;
    publisher_.Update(snap.gpus);
  }
}

}  // namespace tessera::node

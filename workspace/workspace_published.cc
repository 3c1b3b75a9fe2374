// SPDX-License-Identifier: BSD-3-Clause
// workspace_published: the side of a workspace that a store shared by cluster nodes sees (its published
// manifests, and catching up with a snapshot another node took; docs/cluster.md §6).
#include "workspace/workspace.h"

#include "common/log.h"

namespace cellgate::workspace {

common::Result<std::optional<std::string>> Workspace::catch_up() {
  if (!published_) return std::optional<std::string>();
  auto newest = published_->newest();
  if (!newest) return newest.error();
  if (!newest.value()) return std::optional<std::string>();
  const Manifest& m = *newest.value();
  if (load_snapshot(m.id)) return std::optional<std::string>();  // taken or adopted here
  if (const std::string head = head_id(); !head.empty()) {
    auto mine = load_snapshot(head);
    if (mine && mine->created_ns >= m.created_ns) return std::optional<std::string>();
  }
  // A node that returns after it was declared lost may hold changes made after its last snapshot.
  // They stay here, labelled, and are published as held: no node takes them for the workspace's newest
  // state, and a gc on any node keeps their objects.
  SnapshotOptions keep;
  keep.automatic = false;
  keep.label = "kept before restoring " + m.id + " from the shared store";
  keep.held = true;
  if (auto kept = snapshot(keep); !kept) return kept.error();
  auto adopted = adopt(m);
  if (!adopted) return adopted.error();
  return std::optional<std::string>(m.id);
}

void Workspace::publish_copy(const std::string& id, const std::string& text, bool held) {
  if (!published_) return;
  if (auto st = published_->publish(id, text, held); !st)
    common::log_warn("workspace={} snapshot={} msg=\"cannot publish the manifest to the shared store\" error=\"{}\"",
                     dir_, id, st.error().message);
}

void Workspace::unpublish(const std::string& id) {
  if (!published_) return;
  if (auto st = published_->remove(id); !st)
    common::log_warn("workspace={} snapshot={} msg=\"cannot remove the manifest from the shared store\" error=\"{}\"",
                     dir_, id, st.error().message);
}

}  // namespace cellgate::workspace

// SPDX-License-Identifier: BSD-3-Clause
// pins: objects of the store that something other than a snapshot holds (a journal's large outputs, a
// published artifact), so that gc keeps them and quotas can count them.
#pragma once

#include <string>
#include <unordered_set>
#include <vector>

#include "common/result.h"

namespace cellgate::workspace {

// Where pins live: beside the objects they hold. With a store that cluster nodes may share
// (--store-dir), <store>/pins, so that a gc on any node sees every node's pins; else <data>/pins.
struct PinsDir {
  std::string path;
};
// store_dir: --store-dir's ("" when not given).
PinsDir pins_dir(const std::string& data_dir, const std::string& store_dir);

// <pins>/<kind>/<owner>/<name>: the hashes one holder keeps, one per line. kind, owner and name are
// names (layout.h's rule). gc keeps every object a pin names. Thread-safe (files only); one writer per
// pin at a time (its holder; names are kernel and artifact ids, unique across nodes).
class Pins {
 public:
  explicit Pins(PinsDir dir);

  // Appends hashes to the pin, creating it. Not durable by itself: a holder writes its pin before
  // committing the objects' batch, whose syncfs(2) makes both durable (a pin naming an object that a
  // crash lost keeps nothing).
  common::Status add(const std::string& kind, const std::string& owner, const std::string& name,
                     const std::vector<std::string>& hashes);
  // Replaces the pin's hashes, durably (write_file_atomic); none: removes the pin.
  common::Status replace(const std::string& kind, const std::string& owner, const std::string& name,
                         const std::vector<std::string>& hashes);
  // ENOENT is success.
  common::Status remove(const std::string& kind, const std::string& owner, const std::string& name);
  // kNotFound when there is no such pin.
  common::Result<std::vector<std::string>> read(const std::string& kind, const std::string& owner,
                                                const std::string& name) const;
  // The names of owner's pins of kind (none: empty).
  common::Result<std::vector<std::string>> names(const std::string& kind, const std::string& owner) const;
  // Every hash any pin names, once (gc). A pin that cannot be read is an error: gc must not guess.
  common::Result<std::unordered_set<std::string>> all() const;
  const std::string& root() const { return root_; }

 private:
  common::Result<std::string> dir_of(const std::string& kind, const std::string& owner) const;
  std::string root_;
};

// Moves the pins under <data>/pins into `to` when that is elsewhere (a data dir given a shared store
// after it held pins): each pin is merged into its namesake there durably, then removed here, so an
// interrupted move loses nothing and a second one finishes it. Returns how many pins moved.
common::Result<size_t> move_local_pins(const std::string& data_dir, const PinsDir& to);

}  // namespace cellgate::workspace

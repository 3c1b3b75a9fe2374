// SPDX-License-Identifier: BSD-3-Clause
// pins: objects of the store that something other than a snapshot holds (a journal's large outputs, a
// published artifact), so that gc keeps them and quotas can count them.
#pragma once

#include <string>
#include <unordered_set>
#include <vector>

#include "common/result.h"

namespace cellgate::workspace {

// <data>/pins/<kind>/<owner>/<name>: the hashes one holder keeps, one per line. kind, owner and name are
// names (layout.h's rule). gc keeps every object a pin names. Thread-safe (files only); one writer per
// pin at a time (its holder).
class Pins {
 public:
  explicit Pins(std::string data_dir);

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

 private:
  common::Result<std::string> dir_of(const std::string& kind, const std::string& owner) const;
  std::string root_;
};

std::string pins_dir(const std::string& data_dir);

}  // namespace cellgate::workspace

// registry.hpp: the one registry of named implementations (strategies, collective algorithms,
// simulator lowerings, engines, MPI algorithms).
//
// A registry holds one instance of each implementation, made once from a list of factories,
// in the order the list gives (the order help texts and defaults use). Looking a name up that
// no implementation has is bad input: an InputError naming the file, the key and every name
// that would have been accepted. An extension outside the tree (a strategy defined in a test)
// is added at run time with add(), before the lookups that should see it, from one thread.
// What it leaves out: registration from static initialisers (static libraries drop
// unreferenced objects; each registry lists its factories explicitly) and removal.
#pragma once

#include <initializer_list>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "model/base/error.hpp"

namespace tauplan::model {

template <typename Item>
class Registry {
 public:
  using Factory = std::unique_ptr<Item> (*)();

  /// `key` names the job key (or flag) a name is given under, for errors.
  Registry(std::string key, std::initializer_list<Factory> factories) : key_(std::move(key)) {
    for (Factory factory : factories)
      items_.push_back(factory());
  }

  /// The item named `name`, or nullptr.
  const Item* find(const std::string& name) const {
    for (const auto& item : items_)
      if (name == item->name()) return item.get();
    return nullptr;
  }

  /// The item named `name`; throws InputError(file, key, "one of ...") when there is none
  /// (`key` empty: the registry's own key).
  const Item& get(const std::string& name, const std::string& file,
                  const std::string& key = "") const {
    if (const Item* item = find(name)) return *item;
    std::string list;
    for (const auto& n : names())
      list += (list.empty() ? "" : ", ") + n;
    throw InputError(file, key.empty() ? key_ : key, "one of " + list, "'" + name + "'");
  }

  /// Every registered name, in registration order.
  std::vector<std::string> names() const {
    std::vector<std::string> out;
    for (const auto& item : items_)
      out.emplace_back(item->name());
    return out;
  }

  const std::vector<std::unique_ptr<Item>>& items() const { return items_; }

  /// Adds `item` after the listed ones (an extension registered at run time, before any
  /// lookup that should see it); throws std::invalid_argument when its name is taken.
  void add(std::unique_ptr<Item> item) {
    if (find(item->name()))
      throw std::invalid_argument(key_ + ": '" + std::string(item->name()) + "' is registered");
    items_.push_back(std::move(item));
  }

 private:
  std::string key_;
  std::vector<std::unique_ptr<Item>> items_;
};

}  // namespace tauplan::model

// Errors that end a tool with exit status 2 (usage, I/O, format), carrying the
// one-line message CLI.md prescribes: "<what>: <where>".
#pragma once
#include <stdexcept>
#include <string>

namespace wit {

class Error : public std::runtime_error {
 public:
  // what: lowercase description without final period; where: file, optionally with
  // ":line" or " at byte N".
  Error(const std::string& what, const std::string& where = "", const std::string& hint = "")
      : std::runtime_error(where.empty() ? what : what + ": " + where), hint_(hint) {}
  const std::string& hint() const { return hint_; }

 private:
  std::string hint_;
};

}  // namespace wit

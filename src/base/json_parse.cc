// See json_parse.h.
#include "base/json_parse.h"

#include <utility>
#include <vector>

namespace detrain {
namespace {

using Json = nlohmann::json;

// A SAX handler (nlohmann::json_sax's interface; nlohmann::json::sax_parse calls it statically)
// that builds the value it is fed into *root, as nlohmann's DOM parser does. `open_` holds the
// arrays and objects being filled, innermost last; their addresses are stable while they are
// open (a container's slot does not move until its parent changes, and its parent changes only
// after it has closed). Reusable: once a value is complete, the next event starts a new one.
class DomBuilder {
 public:
  DomBuilder(Json* root, std::optional<std::string>* duplicate_key)
      : root_(root), duplicate_key_(duplicate_key) {}

  // True while an array or object of the value is still open.
  bool Open() const { return !open_.empty(); }

  bool null() { return Put(nullptr); }
  bool boolean(bool v) { return Put(v); }
  bool number_integer(Json::number_integer_t v) { return Put(v); }
  bool number_unsigned(Json::number_unsigned_t v) { return Put(v); }
  bool number_float(Json::number_float_t v, const Json::string_t& /*text*/) { return Put(v); }
  bool string(Json::string_t& v) { return Put(std::move(v)); }
  bool binary(Json::binary_t& v) { return Put(Json::binary(std::move(v))); }
  bool start_object(std::size_t /*size*/) {
    Put(Json::value_t::object);
    open_.push_back(last_);
    return true;
  }
  bool key(Json::string_t& k) {
    Json::object_t& object = open_.back()->get_ref<Json::object_t&>();
    // try_emplace leaves `k` alone when the key is there already.
    auto [it, inserted] = object.try_emplace(std::move(k));
    if (!inserted && !duplicate_key_->has_value()) *duplicate_key_ = it->first;
    slot_ = &it->second;
    return true;
  }
  bool end_object() {
    open_.pop_back();
    return true;
  }
  bool start_array(std::size_t /*size*/) {
    Put(Json::value_t::array);
    open_.push_back(last_);
    return true;
  }
  bool end_array() {
    open_.pop_back();
    return true;
  }
  // nlohmann's DOM parser throws the exception it is given; so does this one.
  template <typename Exception>
  bool parse_error(std::size_t /*position*/, const std::string& /*token*/, const Exception& ex) {
    throw ex;
  }

 private:
  // Stores a value where the parser is: the root, the next element of the innermost array, or
  // the slot of the last key of the innermost object; last_ is where it went.
  bool Put(Json v) {
    if (open_.empty()) {
      *root_ = std::move(v);
      last_ = root_;
    } else if (Json& parent = *open_.back(); parent.is_array()) {
      Json::array_t& array = parent.get_ref<Json::array_t&>();
      array.push_back(std::move(v));
      last_ = &array.back();
    } else {
      *slot_ = std::move(v);
      last_ = slot_;
    }
    return true;
  }

  Json* root_;
  std::optional<std::string>* duplicate_key_;
  std::vector<Json*> open_;
  Json* slot_ = nullptr;
  Json* last_ = nullptr;
};

// The SAX handler of StreamJsonObject: the top-level object's own events are handled here, every
// other event goes to a DomBuilder that builds the current member's value (or, when the text is
// not an object, the whole value).
class MemberStream {
 public:
  using Member = std::function<void(std::string, size_t, Json)>;
  MemberStream(const Member& member, std::optional<JsonRepeatedKey>* repeated)
      : member_(member), repeated_(repeated), builder_(&value_, &inner_duplicate_) {}

  bool IsObject() const { return state_ == State::kObject; }

  bool null() {
    return Value([](DomBuilder& b) { return b.null(); });
  }
  bool boolean(bool v) {
    return Value([v](DomBuilder& b) { return b.boolean(v); });
  }
  bool number_integer(Json::number_integer_t v) {
    return Value([v](DomBuilder& b) { return b.number_integer(v); });
  }
  bool number_unsigned(Json::number_unsigned_t v) {
    return Value([v](DomBuilder& b) { return b.number_unsigned(v); });
  }
  bool number_float(Json::number_float_t v, const Json::string_t& s) {
    return Value([&](DomBuilder& b) { return b.number_float(v, s); });
  }
  bool string(Json::string_t& v) {
    return Value([&](DomBuilder& b) { return b.string(v); });
  }
  bool binary(Json::binary_t& v) {
    return Value([&](DomBuilder& b) { return b.binary(v); });
  }
  bool start_object(std::size_t n) {
    if (state_ == State::kStart) {
      state_ = State::kObject;
      return true;
    }
    return Value([n](DomBuilder& b) { return b.start_object(n); });
  }
  bool end_object() {
    if (state_ == State::kObject && !builder_.Open()) return true;  // the top-level object's end
    return Value([](DomBuilder& b) { return b.end_object(); });
  }
  bool start_array(std::size_t n) {
    return Value([n](DomBuilder& b) { return b.start_array(n); });
  }
  bool end_array() {
    return Value([](DomBuilder& b) { return b.end_array(); });
  }
  bool key(Json::string_t& k) {
    const size_t position = keys_++;
    if (state_ == State::kObject && !builder_.Open()) {
      key_ = std::move(k);
      key_position_ = position;
      return true;
    }
    builder_.key(k);
    if (inner_duplicate_.has_value() && !repeated_->has_value()) {
      *repeated_ = JsonRepeatedKey{*inner_duplicate_, position};
    }
    return true;
  }
  template <typename Exception>
  bool parse_error(std::size_t position, const std::string& token, const Exception& ex) {
    return builder_.parse_error(position, token, ex);
  }

 private:
  enum class State { kStart, kObject, kOther };

  // A value event (or the start or end of a nested array or object): to the builder; a member
  // whose value it completes goes to the caller.
  template <typename Event>
  bool Value(const Event& event) {
    if (state_ == State::kStart) state_ = State::kOther;
    event(builder_);
    if (state_ == State::kObject && !builder_.Open()) {
      member_(std::move(key_), key_position_, std::move(value_));
      value_ = Json();
    }
    return true;
  }

  const Member& member_;
  std::optional<JsonRepeatedKey>* repeated_;
  Json value_;
  std::optional<std::string> inner_duplicate_;
  DomBuilder builder_;
  State state_ = State::kStart;
  std::string key_;
  size_t key_position_ = 0;
  size_t keys_ = 0;
};

}  // namespace

Json ParseJsonText(std::string_view text, std::optional<std::string>* duplicate_key) {
  Json out;
  DomBuilder builder(&out, duplicate_key);
  Json::sax_parse(text.begin(), text.end(), &builder);
  return out;
}

bool StreamJsonObject(std::string_view text,
                      const std::function<void(std::string, size_t, Json)>& member,
                      std::optional<JsonRepeatedKey>* repeated_inside) {
  MemberStream stream(member, repeated_inside);
  Json::sax_parse(text.begin(), text.end(), &stream);
  return stream.IsObject();
}

}  // namespace detrain

// Attribute values in both .om encodings: om::AttrValue (the readable Model, format 1 and the JSON view) and
// om::CValue (the compact format 2) have the same oneof, except that the compact one names strings, graphs
// and types by index into its string table and has its own tensor message. One writer and one reader serve
// both; the encoding supplies how a string, a tensor and a graph reference are stored. Not installed.
#pragma once

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "graphsplit/sdk/ir/graph.h"
#include "graphsplit/sdk/status.h"
#include "graphsplit/sdk/strings.h"

namespace graphsplit::om_detail {

// `text(s)`: what the message stores for a string (the string, or its index); `tensor(t, message*)` fills a
// tensor message.
template <class Message, class Text, class WriteTensor>
void write_value(const sdk::AttrValue& v, Message* p, Text text, WriteTensor tensor) {
  using K = sdk::AttrValue::Kind;
  const auto& st = v.storage();
  switch (v.kind()) {
    case K::kNone:
      break;
    case K::kInt:
      p->set_i(std::get<1>(st));
      break;
    case K::kFloat:
      p->set_f(std::get<2>(st));
      break;
    case K::kString: {
      const std::string& s = std::get<3>(st);
      if (sdk::is_valid_utf8(s))
        p->set_s(text(s));
      else
        p->set_raw(s);
      break;
    }
    case K::kBool:
      p->set_b(std::get<4>(st));
      break;
    case K::kInts:
      for (int64_t x : std::get<5>(st)) p->mutable_ints()->add_values(x);
      break;
    case K::kFloats:
      for (double x : std::get<6>(st)) p->mutable_floats()->add_values(x);
      break;
    case K::kStrings: {
      const auto& list = std::get<7>(st);
      if (std::all_of(list.begin(), list.end(), [](const std::string& x) { return sdk::is_valid_utf8(x); })) {
        auto* l = p->mutable_strings();
        for (const std::string& x : list) l->add_values(text(x));
      } else {
        auto* l = p->mutable_raw_strings();
        for (const std::string& x : list) l->add_values(x);
      }
      break;
    }
    case K::kBools:
      for (bool x : std::get<8>(st)) p->mutable_bools()->add_values(x);
      break;
    case K::kTensor:
      tensor(*std::get<9>(st).tensor, p->mutable_tensor());
      break;
    case K::kTensors: {
      auto* l = p->mutable_tensors();
      for (const sdk::Tensor& t : std::get<10>(st)) tensor(t, l->add_values());
      break;
    }
    case K::kGraph:
      p->set_graph(text(std::get<11>(st)->name()));
      break;
    case K::kGraphs: {
      auto* l = p->mutable_graphs();
      for (const sdk::Graph* g : std::get<12>(st)) l->add_values(text(g->name()));
      break;
    }
    case K::kType:
      p->set_type(text(std::get<13>(st).text));
      break;
  }
}

// `text(stored, std::string*)`, `tensor(message, sdk::Tensor*)` and `graph(stored, sdk::Graph**)` turn what
// the message stores back into values, each with a Status naming what is wrong.
template <class Message, class Text, class ReadTensor, class FindGraph>
sdk::Status read_value(const Message& p, sdk::AttrValue* v, Text text, ReadTensor tensor, FindGraph graph) {
  using sdk::AttrValue;
  std::string s;
  switch (p.value_case()) {
    case Message::VALUE_NOT_SET:
      *v = AttrValue();
      break;
    case Message::kI:
      *v = AttrValue::Int(p.i());
      break;
    case Message::kF:
      *v = AttrValue::Float(p.f());
      break;
    case Message::kS:
      GS_RETURN_IF_ERROR(text(p.s(), &s));
      *v = AttrValue::String(std::move(s));
      break;
    case Message::kRaw:
      *v = AttrValue::String(p.raw());
      break;
    case Message::kB:
      *v = AttrValue::Bool(p.b());
      break;
    case Message::kInts:
      *v = AttrValue::Ints({p.ints().values().begin(), p.ints().values().end()});
      break;
    case Message::kFloats:
      *v = AttrValue::Floats({p.floats().values().begin(), p.floats().values().end()});
      break;
    case Message::kStrings: {
      std::vector<std::string> list(static_cast<size_t>(p.strings().values_size()));
      for (int i = 0; i < p.strings().values_size(); ++i)
        GS_RETURN_IF_ERROR(text(p.strings().values(i), &list[static_cast<size_t>(i)]));
      *v = AttrValue::Strings(std::move(list));
      break;
    }
    case Message::kRawStrings:
      *v = AttrValue::Strings({p.raw_strings().values().begin(), p.raw_strings().values().end()});
      break;
    case Message::kBools:
      *v = AttrValue::Bools({p.bools().values().begin(), p.bools().values().end()});
      break;
    case Message::kTensor: {
      sdk::Tensor t;
      GS_RETURN_IF_ERROR(tensor(p.tensor(), &t));
      *v = AttrValue::OfTensor(std::move(t));
      break;
    }
    case Message::kTensors: {
      std::vector<sdk::Tensor> ts(static_cast<size_t>(p.tensors().values_size()));
      for (int i = 0; i < p.tensors().values_size(); ++i)
        GS_RETURN_IF_ERROR(tensor(p.tensors().values(i), &ts[static_cast<size_t>(i)]));
      *v = AttrValue::Tensors(std::move(ts));
      break;
    }
    case Message::kGraph: {
      sdk::Graph* g = nullptr;
      GS_RETURN_IF_ERROR(graph(p.graph(), &g));
      *v = AttrValue::OfGraph(g);
      break;
    }
    case Message::kGraphs: {
      std::vector<sdk::Graph*> gs(static_cast<size_t>(p.graphs().values_size()));
      for (int i = 0; i < p.graphs().values_size(); ++i)
        GS_RETURN_IF_ERROR(graph(p.graphs().values(i), &gs[static_cast<size_t>(i)]));
      *v = AttrValue::Graphs(std::move(gs));
      break;
    }
    case Message::kType:
      GS_RETURN_IF_ERROR(text(p.type(), &s));
      *v = AttrValue::Type(std::move(s));
      break;
  }
  return sdk::Status::ok();
}

}  // namespace graphsplit::om_detail

// The .om encodings: the compact file (format 2) against the readable Model (format 1, the JSON view).
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <google/protobuf/util/json_util.h>
#include <google/protobuf/wire_format_lite.h>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <set>

#include "common/atomic_file.h"
#include "graphsplit/sdk/ir/graph.h"
#include "model/om.pb.h"
#include "model/om_internal.h"
#include "model/om_io.h"

namespace graphsplit {
namespace {

// A chain of `n` Relus carrying the same engine attributes, with a control edge and a two-output node.
std::unique_ptr<sdk::Graph> chain(int n) {
  auto g = sdk::Graph::create("chain");
  sdk::TensorDesc d;
  d.dtype = sdk::DataType::kFloat;
  d.shape = sdk::Shape({64, 64});
  sdk::Node* prev = g->add_node("x", "Data", 0, 0);
  prev->add_output(d, "x");
  for (int k = 0; k < n; ++k) {
    sdk::Node* r = g->add_node("r" + std::to_string(k), "Relu", 1, 0);
    r->add_output(d, "r" + std::to_string(k));
    r->attrs().set("_op_engine_name", sdk::AttrValue::String("AIcoreEngine"));
    r->attrs().set("_kernel_lib_name", sdk::AttrValue::String("AIcoreEngine"));
    EXPECT_TRUE(g->add_edge({prev, 0}, {r, 0}).is_ok());
    prev = r;
  }
  sdk::Node* split = g->add_node("split", "Split", 1, 0);
  split->add_output(d, "a");
  split->add_output(d, "b");
  EXPECT_TRUE(g->add_edge({prev, 0}, {split, 0}).is_ok());
  EXPECT_TRUE(g->add_control_edge(g->find_node("x"), split).is_ok());
  sdk::Node* out = g->add_node("out", "NetOutput", 2, 0);
  EXPECT_TRUE(g->add_edge({split, 0}, {out, 0}).is_ok());
  EXPECT_TRUE(g->add_edge({split, 1}, {out, 1}).is_ok());
  return g;
}

TEST(OmFormatTest, CompactFileStoresRecurringStringsOnce) {
  auto g = chain(10'000);
  std::string bytes;
  ASSERT_TRUE(serialize_om(*g, &bytes).is_ok());
  // A node costs its name, a few small numbers and nothing else: well under the 70+ bytes of format 1.
  EXPECT_LT(bytes.size(), 10'000u * 24);
  std::unique_ptr<sdk::Graph> loaded;
  ASSERT_TRUE(parse_om(bytes, "c.om", &loaded).is_ok());
  EXPECT_EQ(loaded->num_nodes(), g->num_nodes());
  const sdk::Node* split = loaded->find_node("split");
  ASSERT_NE(split, nullptr);
  EXPECT_EQ(split->output_name(1), "b");
  ASSERT_EQ(split->control_inputs().size(), 1u);
  EXPECT_EQ(split->control_inputs()[0]->name(), "x");
  EXPECT_EQ(loaded->find_node("r9999")->attrs().get_string("_op_engine_name"), "AIcoreEngine");
  std::string again;
  ASSERT_TRUE(serialize_om(*loaded, &again).is_ok());
  EXPECT_TRUE(again == bytes);
}

// atc writes the tables and each graph as separate pieces, never joined in memory: the file must be exactly
// the bytes of serialize_om, and a file of more pieces than one writev takes must come out whole and in
// order.
TEST(OmFormatTest, WritingInPiecesGivesTheSameBytes) {
  const std::string dir = ::testing::TempDir();
  std::string bytes, file;
  // 80,000 nodes make a graph larger than the writer's 1 MiB batch: flushed, then written on its own.
  for (int n : {2'000, 80'000}) {
    auto g = chain(n);
    ASSERT_TRUE(serialize_om(*g, &bytes).is_ok());
    size_t size = 0;
    ASSERT_TRUE(write_om_file(*g, dir + "/pieces.om", &size).is_ok());
    ASSERT_TRUE(read_file(dir + "/pieces.om", &file).is_ok());
    EXPECT_EQ(size, bytes.size()) << n;
    EXPECT_TRUE(file == bytes) << n;
  }
  if (bytes.size() <= (size_t{1} << 20)) ADD_FAILURE() << "the large case no longer exceeds one batch";

  std::vector<std::string> texts;
  std::string joined;
  for (int i = 0; i < 3'000; ++i) {
    texts.push_back(i % 7 == 0 ? std::string()
                               : std::string(static_cast<size_t>(i % 300), char('a' + i % 26)));
    joined += texts.back();
  }
  const std::vector<std::string_view> pieces(texts.begin(), texts.end());
  ASSERT_TRUE(write_file_atomically(dir + "/pieces.bin", pieces).is_ok());
  ASSERT_TRUE(read_file(dir + "/pieces.bin", &file).is_ok());
  EXPECT_EQ(file.size(), joined.size());
  EXPECT_TRUE(file == joined);
}

// A root with a two-branch node: subgraphs, a tensor attribute, named dims, graph references, attribute lists
// shared and not.
std::unique_ptr<sdk::Graph> branches() {
  auto g = sdk::Graph::create("root");
  sdk::TensorDesc d;
  d.dtype = sdk::DataType::kFloat;
  d.shape = sdk::Shape({-1, 8});
  d.shape.set_dim_names({"batch", ""});
  sdk::Node* x = g->add_node("x", "Data", 0, 0);
  x->add_output(d, "x");
  sdk::TensorDesc w = d;
  w.shape = sdk::Shape({2});
  sdk::Node* c = g->add_node("w", "Const", 0, 0);
  c->add_output(w, "w");
  c->attrs().set("value", sdk::AttrValue::OfTensor(sdk::Tensor(w, std::string(8, '\x01'))));
  sdk::Node* call = g->add_node("if", "If", 2, 0);
  call->add_output(d, "y");
  EXPECT_TRUE(g->add_edge({x, 0}, {call, 0}).is_ok());
  EXPECT_TRUE(g->add_edge({x, 0}, {call, 1}).is_ok());
  std::vector<sdk::Graph*> subs;
  for (const char* name : {"then", "else"}) {
    sdk::Graph* sub = g->add_subgraph(name, call);
    sdk::Node* in = sub->add_node(std::string(name) + "_x", "Data", 0, 0);
    in->add_output(d, "x");
    in->attrs().set("index", sdk::AttrValue::Int(0));
    in->attrs().set("_parent_node_index", sdk::AttrValue::Int(1));
    sdk::Node* r = sub->add_node(std::string(name) + "_r", "Relu", 1, 0);
    r->add_output(d, std::string(name) + "_y");
    r->attrs().set("_is_unknown_shape", sdk::AttrValue::Bool(true));
    r->attrs().set("tag", sdk::AttrValue::Strings({name, "shared"}));
    EXPECT_TRUE(sub->add_edge({in, 0}, {r, 0}).is_ok());
    sdk::Node* o = sub->add_node(std::string(name) + "_out", "NetOutput", 1, 0);
    EXPECT_TRUE(sub->add_edge({r, 0}, {o, 0}).is_ok());
    sub->attrs().set("_is_unknown_shape", sdk::AttrValue::Bool(true));
    subs.push_back(sub);
  }
  call->attrs().set("then_branch", sdk::AttrValue::OfGraph(subs[0]));
  call->attrs().set("else_branch", sdk::AttrValue::OfGraph(subs[1]));
  sdk::Node* out = g->add_node("out", "NetOutput", 2, 0);
  EXPECT_TRUE(g->add_edge({call, 0}, {out, 0}).is_ok());
  EXPECT_TRUE(g->add_edge({c, 0}, {out, 1}).is_ok());
  return g;
}

// The graph's file, and the message protobuf parses the file to.
om::Compact written(const sdk::Graph& g, std::string* bytes) {
  EXPECT_TRUE(serialize_om(g, bytes).is_ok());
  om::Compact m;
  EXPECT_TRUE(m.ParseFromString(*bytes));
  return m;
}

// The writer encodes the tables and graphs itself, in pieces: the file must be what protobuf writes for the
// message it parses to, with every string, descriptor and attribute list stored once.
TEST(OmFormatTest, TheFileIsProtobufsOwnEncodingOfItsMessage) {
  for (const auto& g : {branches(), chain(50)}) {
    std::string bytes;
    const om::Compact m = written(*g, &bytes);
    EXPECT_TRUE(m.SerializeAsString() == bytes) << g->name();
    EXPECT_EQ(m.graphs_size(), 1 + static_cast<int>(g->subgraphs().size()));
    std::set<std::string> strings(m.strings().begin(), m.strings().end());
    EXPECT_EQ(strings.size(), static_cast<size_t>(m.strings_size())) << g->name();
    std::set<std::string> descs, sets;
    for (const auto& d : m.descs()) descs.insert(d.SerializeAsString());
    for (const auto& a : m.attr_sets()) sets.insert(a.SerializeAsString());
    EXPECT_EQ(descs.size(), static_cast<size_t>(m.descs_size())) << g->name();
    EXPECT_EQ(sets.size(), static_cast<size_t>(m.attr_sets_size())) << g->name();
    std::unique_ptr<sdk::Graph> loaded;
    ASSERT_TRUE(parse_om(bytes, "b.om", &loaded).is_ok());
    std::string again;
    ASSERT_TRUE(serialize_om(*loaded, &again).is_ok());
    EXPECT_TRUE(again == bytes) << g->name();
  }
  auto g = branches();
  std::string bytes;
  ASSERT_TRUE(serialize_om(*g, &bytes).is_ok());
  std::unique_ptr<sdk::Graph> loaded;
  ASSERT_TRUE(parse_om(bytes, "b.om", &loaded).is_ok());
  ASSERT_EQ(loaded->subgraphs().size(), 2u);
  EXPECT_EQ(loaded->subgraphs()[1]->find_node("else_r")->attrs().get("tag")->as_strings()->at(0), "else");
  EXPECT_EQ(loaded->find_node("x")->output_desc(0).shape.dim_names().at(0), "batch");
  EXPECT_EQ(loaded->find_node("w")->attrs().get("value")->as_tensor()->bytes(), std::string(8, '\x01'));
  EXPECT_EQ(loaded->find_node("if")->attrs().get("else_branch")->as_graph(), loaded->subgraphs()[1]);
}

// Lists holding weights are written when the table is, not kept as bytes: the table must still be protobuf's
// own encoding, in entry order among the small lists, with equal weights in separate buffers stored once.
TEST(OmFormatTest, WeightsAreStoredOnceAndInEntryOrder) {
  auto g = sdk::Graph::create("weights");
  sdk::TensorDesc d;
  d.dtype = sdk::DataType::kFloat;
  d.shape = sdk::Shape({256, 256});
  const std::string same(256 * 256 * 4, '\x11');
  std::string other = same;
  other[12345] = '\x22';
  int k = 0;
  auto constant = [&](const std::string& bytes) {
    sdk::Node* c = g->add_node("w" + std::to_string(k++), "Const", 0, 0);
    c->add_output(d);
    c->attrs().set("value", sdk::AttrValue::OfTensor(sdk::Tensor(d, bytes)));  // a buffer of its own
  };
  auto small = [&](const std::string& tag) {
    sdk::Node* n = g->add_node("s" + std::to_string(k++), "Relu", 0, 0);
    n->add_output(d);
    n->attrs().set("tag", sdk::AttrValue::String(tag));
  };
  small("first");
  constant(same);
  small("second");
  constant(same);
  constant(other);
  small("third");
  // A list of weights with other values around them, an empty tensor and a scalar one among them: the writer
  // encodes such a list itself, and its bytes must be protobuf's.
  sdk::Node* mixed = g->add_node("mixed", "Custom", 0, 0);
  mixed->add_output(d);
  sdk::TensorDesc empty_desc, scalar_desc;
  empty_desc.dtype = sdk::DataType::kInt64;
  empty_desc.shape = sdk::Shape({0});
  scalar_desc.dtype = sdk::DataType::kInt32;
  scalar_desc.shape = sdk::Shape(std::vector<int64_t>{});
  mixed->attrs().set("axes", sdk::AttrValue::Ints({0, -1, 300}));
  mixed->attrs().set("empty", sdk::AttrValue::OfTensor(sdk::Tensor(empty_desc, std::string())));
  mixed->attrs().set("weights", sdk::AttrValue::OfTensor(sdk::Tensor(d, other)));
  mixed->attrs().set("mode", sdk::AttrValue::String("fast"));
  mixed->attrs().set("scalar", sdk::AttrValue::OfTensor(sdk::Tensor(scalar_desc, std::string(4, '\x07'))));
  std::string bytes;
  const om::Compact m = written(*g, &bytes);
  EXPECT_TRUE(m.SerializeAsString() == bytes);
  // Three small lists and three of weights, in the order the nodes first use them.
  ASSERT_EQ(m.attr_sets_size(), 6);
  EXPECT_EQ(m.attr_sets(5).values(2).tensor().data(), other);
  EXPECT_EQ(m.attr_sets(5).values(1).tensor().data(), "");
  EXPECT_EQ(m.attr_sets(1).values(0).tensor().data(), same);
  EXPECT_EQ(m.attr_sets(3).values(0).tensor().data(), other);
  EXPECT_LT(bytes.size(), 3 * same.size() + 4096);  // the mixed list holds its own copy of `other`
  std::unique_ptr<sdk::Graph> loaded;
  ASSERT_TRUE(parse_om(bytes, "w.om", &loaded).is_ok());
  EXPECT_EQ(loaded->find_node("w3")->attrs().get("value")->as_tensor()->bytes(), same);
  EXPECT_EQ(loaded->find_node("w4")->attrs().get("value")->as_tensor()->bytes(), other);
  EXPECT_EQ(loaded->find_node("s5")->attrs().get_string("tag"), "third");
  const sdk::AttrMap& back = loaded->find_node("mixed")->attrs();
  EXPECT_EQ(back.get("weights")->as_tensor()->bytes(), other);
  EXPECT_EQ(back.get("empty")->as_tensor()->size_bytes(), 0u);
  EXPECT_EQ(back.get("scalar")->as_tensor()->bytes(), std::string(4, '\x07'));
  EXPECT_EQ(back.get_string("mode"), "fast");
  std::string again;
  ASSERT_TRUE(serialize_om(*loaded, &again).is_ok());
  EXPECT_TRUE(again == bytes);
}

// The reader decodes nodes itself instead of through protobuf: it must accept every encoding protobuf accepts
// for the same message. Each node is re-encoded with its fields in reverse order, numbers unpacked, a
// 64-bit varint for a 32-bit field and unknown fields of every wire type (a group too); each graph's own
// fields follow its nodes, and the tables follow the graphs. protobuf reads the result as the same message,
// and so must the reader.
std::string reencoded(const om::Compact& m) {
  using google::protobuf::internal::WireFormatLite;
  std::string out;
  google::protobuf::io::StringOutputStream stream(&out);
  google::protobuf::io::CodedOutputStream o(&stream);
  auto unknown = [&] {
    WireFormatLite::WriteUInt64(99, uint64_t{1} << 40, &o);
    WireFormatLite::WriteFixed32(98, 7, &o);
    WireFormatLite::WriteFixed64(97, 8, &o);
    WireFormatLite::WriteString(96, "not a field", &o);
    o.WriteTag(WireFormatLite::MakeTag(95, WireFormatLite::WIRETYPE_START_GROUP));
    WireFormatLite::WriteUInt32(1, 5, &o);
    o.WriteTag(WireFormatLite::MakeTag(95, WireFormatLite::WIRETYPE_END_GROUP));
  };
  auto node = [&](const om::CNode& n) {
    std::string bytes;
    google::protobuf::io::StringOutputStream s(&bytes);
    google::protobuf::io::CodedOutputStream c(&s);
    WireFormatLite::WriteUInt64(7, n.attrs() | (uint64_t{1} << 40), &c);  // protobuf keeps the low 32 bits
    for (uint32_t d : n.output_descs()) WireFormatLite::WriteUInt32(6, d, &c);
    for (const std::string& name : n.output_names()) WireFormatLite::WriteString(5, name, &c);
    for (uint32_t ci : n.control_inputs()) WireFormatLite::WriteUInt32(4, ci, &c);
    for (int32_t i : n.inputs()) WireFormatLite::WriteSInt32(3, i, &c);
    WireFormatLite::WriteString(1, "a name replaced below", &c);
    WireFormatLite::WriteUInt32(2, n.type(), &c);
    WireFormatLite::WriteString(1, n.name(), &c);  // the last of a singular field wins
    c.Trim();
    return bytes;
  };
  WireFormatLite::WriteString(1, m.magic(), &o);  // the format is sniffed from the first two fields
  WireFormatLite::WriteUInt32(2, m.format_version(), &o);
  unknown();
  for (const om::CGraph& g : m.graphs()) {
    std::string bytes;
    {
      google::protobuf::io::StringOutputStream s(&bytes);
      google::protobuf::io::CodedOutputStream c(&s);
      for (const om::CNode& n : g.nodes()) WireFormatLite::WriteString(5, node(n), &c);
      WireFormatLite::WriteUInt32(4, g.attrs(), &c);
      WireFormatLite::WriteUInt32(3, g.parent_graph(), &c);
      WireFormatLite::WriteSInt32(2, g.parent_node(), &c);
      WireFormatLite::WriteUInt32(1, g.name(), &c);
    }
    WireFormatLite::WriteString(7, bytes, &o);
    unknown();
  }
  WireFormatLite::WriteString(3, m.producer(), &o);
  for (const std::string& s : m.strings()) WireFormatLite::WriteString(4, s, &o);
  for (const om::CDesc& d : m.descs()) WireFormatLite::WriteString(5, d.SerializeAsString(), &o);
  for (const om::CAttrSet& a : m.attr_sets()) WireFormatLite::WriteString(6, a.SerializeAsString(), &o);
  o.Trim();
  return out;
}

TEST(OmFormatTest, AnyEncodingProtobufAcceptsLoadsAsTheSameGraph) {
  for (const auto& g : {branches(), chain(20)}) {
    std::string bytes;
    const om::Compact m = written(*g, &bytes);
    const std::string odd = reencoded(m);
    om::Compact check;
    ASSERT_TRUE(check.ParseFromString(odd));
    check.DiscardUnknownFields();
    for (om::CGraph& cg : *check.mutable_graphs()) {
      for (om::CNode& n : *cg.mutable_nodes()) n.DiscardUnknownFields();
    }
    ASSERT_TRUE(check.SerializeAsString() == bytes) << "the test's encoding is not the same message";
    std::unique_ptr<sdk::Graph> loaded;
    const sdk::Status st = parse_om(odd, "odd.om", &loaded);
    ASSERT_TRUE(st.is_ok()) << st.message();
    std::string again;
    ASSERT_TRUE(serialize_om(*loaded, &again).is_ok());
    EXPECT_TRUE(again == bytes) << g->name();
  }
}

// A node may name a producer that comes after it (a graph not in topological order): it is wired once every
// node exists, and a producer's consumers stay in node order.
TEST(OmFormatTest, AProducerAfterItsConsumerIsWiredInNodeOrder) {
  auto g = sdk::Graph::create("unsorted");
  sdk::TensorDesc d;
  d.dtype = sdk::DataType::kFloat;
  sdk::Node* early = g->add_node("early", "Relu", 1, 0);
  early->add_output(d, "early");
  sdk::Node* x = g->add_node("x", "Data", 0, 0);
  x->add_output(d, "x");
  sdk::Node* late = g->add_node("late", "Relu", 1, 0);
  late->add_output(d, "late");
  sdk::Node* out = g->add_node("out", "NetOutput", 2, 0);
  ASSERT_TRUE(g->add_edge({x, 0}, {late, 0}).is_ok());  // made first: x's consumers are late, then early
  ASSERT_TRUE(g->add_edge({x, 0}, {early, 0}).is_ok());
  ASSERT_TRUE(g->add_edge({early, 0}, {out, 0}).is_ok());
  ASSERT_TRUE(g->add_edge({late, 0}, {out, 1}).is_ok());
  std::string bytes;
  ASSERT_TRUE(serialize_om(*g, &bytes).is_ok());
  std::unique_ptr<sdk::Graph> loaded;
  const sdk::Status st = parse_om(bytes, "u.om", &loaded);
  ASSERT_TRUE(st.is_ok()) << st.message();
  const auto& consumers = loaded->find_node("x")->consumers(0);
  ASSERT_EQ(consumers.size(), 2u);
  EXPECT_EQ(consumers[0].node->name(), "early");  // node order, as the file lists the edges
  EXPECT_EQ(consumers[1].node->name(), "late");
  EXPECT_EQ(loaded->find_node("out")->input(0).node->name(), "early");
  EXPECT_EQ(loaded->find_node("early")->input(0).node->name(), "x");
}

// Damage inside a node's bytes, with every length still right, is found when the node is read.
TEST(OmFormatTest, ANodeThatDoesNotDecodeIsRefused) {
  auto g = chain(3);
  std::string bytes;
  const om::Compact m = written(*g, &bytes);
  auto refusal = [&](const std::string& node_bytes) {
    om::Compact bad = m;
    const om::CGraph* root = &m.graphs(0);
    // The graph's bytes with node 2 replaced by `node_bytes`, framing intact.
    std::string graph;
    {
      om::CGraph copy = *root;
      copy.clear_nodes();
      graph = copy.SerializeAsString();
    }
    for (int k = 0; k < root->nodes_size(); ++k) {
      const std::string b = k == 2 ? node_bytes : root->nodes(k).SerializeAsString();
      google::protobuf::io::StringOutputStream s(&graph);
      google::protobuf::io::CodedOutputStream c(&s);
      google::protobuf::internal::WireFormatLite::WriteString(5, b, &c);
    }
    bad.clear_graphs();
    std::string file = bad.SerializeAsString();
    google::protobuf::io::StringOutputStream s(&file);
    {
      google::protobuf::io::CodedOutputStream c(&s);
      google::protobuf::internal::WireFormatLite::WriteString(7, graph, &c);
    }
    om::Compact as_protobuf;
    EXPECT_FALSE(as_protobuf.ParseFromString(file)) << "protobuf accepts it too";
    std::unique_ptr<sdk::Graph> root_graph;
    const sdk::Status st = parse_om(file, "bad.om", &root_graph);
    EXPECT_EQ(root_graph, nullptr);
    return st.message();
  };
  const std::string expected =
      "bad.om: not a graphsplit model (the file does not parse; truncated or corrupt?)";
  EXPECT_EQ(refusal(std::string("\x18\xff", 2)), expected);          // a varint cut short
  EXPECT_EQ(refusal(std::string("\x0a\x02\xc3\x28", 4)), expected);  // a name that is not UTF-8
  EXPECT_EQ(refusal(std::string("\x1a\x05\x01", 3)), expected);      // packed inputs longer than the node
  EXPECT_EQ(refusal(std::string("\x1a\x01\x80", 3)), expected);      // a varint cut by its packed list's end
  EXPECT_EQ(refusal(std::string("\x32\x02\x01\xff", 4)), expected);  // the same at a list's last byte
  EXPECT_EQ(refusal(std::string("\x0c", 1)), expected);              // an end-group tag with no group
}

// The writer encodes each node itself: the cases protobuf encodes in its own way must come out as protobuf
// writes them. An unconnected input (-1, zigzag 1), a position past one varint byte, an empty output name (a
// repeated string keeps it), several control inputs, a node with no attributes and one with no outputs, and
// a node whose name and packed fields run past 127 bytes, so that their lengths take two bytes.
TEST(OmFormatTest, NodeEncodingEdgeCasesAreProtobufsOwn) {
  auto g = chain(300);
  sdk::TensorDesc d;
  d.dtype = sdk::DataType::kInt64;
  sdk::Node* gap = g->add_node("gap", "Concat", 3, 0);
  gap->add_output(d, "");
  gap->add_output(d, "second");
  ASSERT_TRUE(g->add_edge({g->find_node("r250"), 0}, {gap, 0}).is_ok());
  ASSERT_TRUE(g->add_edge({g->find_node("x"), 0}, {gap, 2}).is_ok());
  ASSERT_TRUE(g->add_control_edge(g->find_node("r5"), gap).is_ok());
  ASSERT_TRUE(g->add_control_edge(g->find_node("r200"), gap).is_ok());
  sdk::Node* sink = g->add_node("sink", "NoOp", 2, 0);
  ASSERT_TRUE(g->add_edge({gap, 1}, {sink, 1}).is_ok());
  sdk::Node* wide = g->add_node(std::string(200, 'w'), "Concat", 100, 0);
  wide->add_output(d, std::string(150, 'o'));
  for (int i = 0; i < 100; ++i)
    ASSERT_TRUE(g->add_edge({g->find_node("r" + std::to_string(150 + i)), 0}, {wide, i}).is_ok());
  for (int i = 0; i < 60; ++i)
    ASSERT_TRUE(g->add_control_edge(g->find_node("r" + std::to_string(200 + i)), wide).is_ok());
  std::string bytes;
  const om::Compact m = written(*g, &bytes);
  EXPECT_TRUE(m.SerializeAsString() == bytes);
  const om::CNode& long_one = m.graphs(0).nodes(m.graphs(0).nodes_size() - 1);
  EXPECT_EQ(long_one.name(), std::string(200, 'w'));
  EXPECT_EQ(long_one.inputs_size(), 200);         // 300 bytes of numbers
  EXPECT_EQ(long_one.control_inputs_size(), 60);  // 120 bytes
  EXPECT_EQ(long_one.output_names(0), std::string(150, 'o'));
  const om::CNode& written = m.graphs(0).nodes(m.graphs(0).nodes_size() - 3);
  ASSERT_EQ(written.name(), "gap");
  EXPECT_EQ(written.inputs(2), -1);  // the unconnected input
  EXPECT_GT(written.inputs(0), 127);
  ASSERT_EQ(written.output_names_size(), 2);
  EXPECT_EQ(written.output_names(0), "");
  EXPECT_EQ(written.control_inputs_size(), 2);
  std::unique_ptr<sdk::Graph> loaded;
  ASSERT_TRUE(parse_om(bytes, "e.om", &loaded).is_ok());
  const sdk::Node* back = loaded->find_node("gap");
  ASSERT_NE(back, nullptr);
  EXPECT_FALSE(back->input(1).valid());
  EXPECT_EQ(back->output_name(0), "");
  EXPECT_EQ(loaded->find_node("sink")->input(1).node, back);
  std::string again;
  ASSERT_TRUE(serialize_om(*loaded, &again).is_ok());
  EXPECT_TRUE(again == bytes);
}

// Neighbouring nodes with equal attribute lists share one entry without being written twice; lists that
// compare equal as numbers but not as bytes (0.0 and -0.0) must stay apart.
TEST(OmFormatTest, EqualNeighbourAttributesShareAnEntryButSignedZerosDoNot) {
  auto g = chain(4);
  const double values[] = {0.0, -0.0, -0.0, 0.0};
  for (int k = 0; k < 4; ++k)
    g->find_node("r" + std::to_string(k))->attrs().set("alpha", sdk::AttrValue::Float(values[k]));
  std::string bytes;
  const om::Compact m = written(*g, &bytes);
  EXPECT_EQ(m.attr_sets_size(), 2);
  std::unique_ptr<sdk::Graph> loaded;
  ASSERT_TRUE(parse_om(bytes, "z.om", &loaded).is_ok());
  for (int k = 0; k < 4; ++k) {
    const double* v = loaded->find_node("r" + std::to_string(k))->attrs().get("alpha")->as_float();
    ASSERT_NE(v, nullptr);
    EXPECT_EQ(std::signbit(*v), std::signbit(values[k])) << k;
  }
}

// A sink's error stops the write at once and is what the writer returns.
TEST(OmFormatTest, ASinkErrorStopsTheWrite) {
  auto g = branches();
  int calls = 0;
  const sdk::Status s = om_detail::write_compact(*g, [&](std::string_view) {
    return ++calls == 2 ? sdk::Status::resource_exhausted("disk full") : sdk::Status::ok();
  });
  EXPECT_EQ(s.message(), "disk full");
  EXPECT_EQ(calls, 2);
}

// An output file appears whole at commit or not at all: nothing is left of one abandoned before.
TEST(OmFormatTest, AnUncommittedFileLeavesNothingBehind) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(::testing::TempDir()) / "atomic_file_test";
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string path = (dir / "out.om").string();
  {
    AtomicFile file;
    ASSERT_TRUE(file.open(path).is_ok());
    ASSERT_TRUE(file.append("partial").is_ok());
    EXPECT_FALSE(fs::exists(path));
    EXPECT_EQ(std::distance(fs::directory_iterator(dir), fs::directory_iterator()), 1);
  }
  EXPECT_EQ(std::distance(fs::directory_iterator(dir), fs::directory_iterator()), 0);
  AtomicFile file;
  ASSERT_TRUE(file.open(path).is_ok());
  ASSERT_TRUE(file.append({"wh", "", "ole"}).is_ok());
  ASSERT_TRUE(file.commit().is_ok());
  std::string text;
  ASSERT_TRUE(read_file(path, &text).is_ok());
  EXPECT_EQ(text, "whole");
  EXPECT_EQ(std::distance(fs::directory_iterator(dir), fs::directory_iterator()), 1);
  EXPECT_EQ(file.append("more").message(), "AtomicFile: append without a successful open");
  EXPECT_EQ(file.open((dir / "no" / "x.om").string()).message(),
            (dir / "no" / "x.om").string() + ": directory '" + (dir / "no").string() + "' does not exist");
  fs::remove_all(dir);
}

TEST(OmFormatTest, FormatOneFilesStillLoad) {
  auto g = chain(3);
  std::string compact, json;
  ASSERT_TRUE(serialize_om(*g, &compact).is_ok());
  ASSERT_TRUE(graph_to_json(*g, &json).is_ok());
  om::Model model;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(json, &model).ok());
  model.set_format_version(1);
  std::string v1;
  ASSERT_TRUE(model.SerializeToString(&v1));
  EXPECT_GT(v1.size(), compact.size());
  std::unique_ptr<sdk::Graph> loaded;
  ASSERT_TRUE(parse_om(v1, "old.om", &loaded).is_ok());
  std::string again;
  ASSERT_TRUE(serialize_om(*loaded, &again).is_ok());
  EXPECT_TRUE(again == compact);
  std::string from_json;
  ASSERT_TRUE(json_to_om(json, "c.json", &from_json).is_ok());
  EXPECT_TRUE(from_json == compact);
}

// Indices that point nowhere are refused with the file's name, never followed.
TEST(OmFormatTest, CorruptIndicesAreRefused) {
  auto g = chain(2);
  std::string bytes;
  const om::Compact good = written(*g, &bytes);
  auto refusal = [&](const std::function<void(om::Compact*)>& damage) {
    om::Compact m = good;
    damage(&m);
    std::string b;
    m.SerializeToString(&b);
    std::unique_ptr<sdk::Graph> root;
    const sdk::Status s = parse_om(b, "bad.om", &root);
    EXPECT_EQ(root, nullptr);
    return s.message();
  };
  EXPECT_EQ(refusal([](om::Compact* m) { m->mutable_graphs(0)->mutable_nodes(1)->set_type(999); }),
            "bad.om: node 'r0': string index 999 out of range");
  EXPECT_EQ(refusal([](om::Compact* m) { m->mutable_graphs(0)->mutable_nodes(1)->set_inputs(0, 77); }),
            "bad.om: graph 'chain': node 'r0' input 0 names a producer out of range");
  EXPECT_EQ(refusal([](om::Compact* m) { m->mutable_graphs(0)->mutable_nodes(1)->set_output_descs(0, 5); }),
            "bad.om: node 'r0': descriptor index 5 out of range");
  EXPECT_EQ(refusal([](om::Compact* m) { m->mutable_graphs(0)->mutable_nodes(1)->set_attrs(9); }),
            "bad.om: node 'r0': attribute list 9 out of range");
  EXPECT_EQ(refusal([](om::Compact* m) { m->mutable_graphs(0)->set_attrs(9); }),
            "bad.om: graph 'chain': attribute list 9 out of range");
  EXPECT_EQ(
      refusal([](om::Compact* m) { m->mutable_graphs(0)->mutable_nodes(3)->set_control_inputs(0, 40); }),
      "bad.om: graph 'chain': node 'split' has a control input out of range");
  EXPECT_EQ(refusal([](om::Compact* m) { m->mutable_graphs(0)->mutable_nodes(1)->add_inputs(0); }),
            "bad.om: node 'r0': odd input list");
  EXPECT_EQ(refusal([](om::Compact* m) { m->set_magic("XXXX"); }),
            "bad.om: not a graphsplit model (bad magic)");
  EXPECT_EQ(
      refusal([](om::Compact* m) { m->set_format_version(3); }),
      "bad.om: model format version 3 is not supported (this graphsplit reads 1 and 2; a newer graphsplit "
      "is needed)");
}

TEST(OmFormatTest, BadJsonIsRefusedWithItsName) {
  std::string bytes;
  sdk::Status s = json_to_om("{\"magic\": 7", "m.json", &bytes);
  EXPECT_FALSE(s.is_ok());
  EXPECT_EQ(s.message().rfind("m.json: not a graphsplit JSON model: ", 0), 0u) << s.message();
  s = json_to_om("{\"magic\": \"GSOM\", \"format_version\": 9}", "m.json", &bytes);
  EXPECT_EQ(
      s.message(),
      "m.json: model format version 9 is not supported (this graphsplit reads 1 and 2; a newer graphsplit "
      "is needed)");
  EXPECT_TRUE(bytes.empty());
}

}  // namespace
}  // namespace graphsplit

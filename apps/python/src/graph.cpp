// graphsplit.Graph and graphsplit.Node: inspection and editing of a model's graphs, GE's subgraph API
// (GeApiWrapper_Graph_GetAllSubgraphs / GetSubGraph / AddSubGraph / RemoveSubgraph).
#include <pybind11/stl.h>

#include <algorithm>

#include "bindings.h"
#include "graphsplit/sdk/ir/names.h"
#include "graphsplit/sdk/ir/verify.h"
#include "model/dot.h"
#include "model/om_io.h"

namespace graphsplit::python {
namespace {

// One value as Python sees it: dims are ints, a symbolic dim its expression text, an unknown one None.
struct ValueInfo {
  std::string name;
  std::string dtype;
  std::string kind;
  py::object shape;  // None: unknown rank
  std::string repr() const {
    std::string s = name + ": " + dtype;
    if (shape.is_none()) return s + "[?]";
    s += "[";
    bool first = true;
    for (py::handle d : shape) {
      s += (first ? "" : ",") + (d.is_none() ? std::string("?") : std::string(py::str(d)));
      first = false;
    }
    return s + "]";
  }
};

ValueInfo info_of(const std::string& name, const sdk::TensorDesc& d) {
  ValueInfo v;
  v.name = name;
  v.dtype = std::string(sdk::to_string(d.dtype));
  v.kind = d.kind == sdk::ValueKind::kTensor     ? "tensor"
           : d.kind == sdk::ValueKind::kSequence ? "sequence"
                                                 : "optional";
  if (d.shape.is_unknown_rank()) {
    v.shape = py::none();
    return v;
  }
  py::list dims;
  const auto& names = d.shape.dim_names();
  for (size_t i = 0; i < d.shape.rank(); ++i) {
    const int64_t x = d.shape.dims()[i];
    if (x >= 0) {
      dims.append(x);
    } else if (i < names.size() && !names[i].empty()) {
      dims.append(names[i]);
    } else {
      dims.append(py::none());
    }
  }
  v.shape = dims;
  return v;
}

py::object attr_to_python(const std::shared_ptr<Model>& model, const sdk::AttrValue& a) {
  return std::visit(
      [&](const auto& x) -> py::object {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, std::monostate>) {
          return py::none();
        } else if constexpr (std::is_same_v<T, sdk::TensorRef>) {
          return tensor_to_numpy(*x.tensor);
        } else if constexpr (std::is_same_v<T, std::vector<sdk::Tensor>>) {
          py::list l;
          for (const sdk::Tensor& t : x) l.append(tensor_to_numpy(t));
          return l;
        } else if constexpr (std::is_same_v<T, sdk::Graph*>) {
          return x ? py::cast(ref_of(model, *x)) : py::none();
        } else if constexpr (std::is_same_v<T, std::vector<sdk::Graph*>>) {
          py::list l;
          for (const sdk::Graph* g : x) l.append(py::cast(ref_of(model, *g)));
          return l;
        } else if constexpr (std::is_same_v<T, sdk::TypeRef>) {
          return py::str(x.text);
        } else {
          return py::cast(x);
        }
      },
      a.storage());
}

std::vector<ValueInfo> graph_inputs(const sdk::Graph& g) {
  std::vector<const sdk::Node*> data;
  for (const sdk::Node* n : g.nodes())
    if (n->type() == sdk::op::kData) data.push_back(n);
  std::stable_sort(data.begin(), data.end(), [](const sdk::Node* a, const sdk::Node* b) {
    return a->attrs().get_int(sdk::attr::kIndex, 0) < b->attrs().get_int(sdk::attr::kIndex, 0);
  });
  std::vector<ValueInfo> out;
  for (const sdk::Node* n : data) out.push_back(info_of(n->output_name(0), n->output_desc(0)));
  return out;
}

std::vector<ValueInfo> graph_outputs(const sdk::Graph& g) {
  std::vector<ValueInfo> out;
  for (const sdk::Node* n : g.nodes()) {
    if (n->type() != sdk::op::kNetOutput) continue;
    for (const sdk::OutPort& p : n->inputs()) {
      if (p.valid()) out.push_back(info_of(p.node->output_name(p.index), p.node->output_desc(p.index)));
    }
  }
  return out;
}

sdk::Graph& resolve_graph(const py::object& name_or_graph, const GraphRef& self) {
  sdk::Graph& root = *self.model->root;
  if (py::isinstance<GraphRef>(name_or_graph)) {
    const GraphRef& g = name_or_graph.cast<const GraphRef&>();
    if (g.model != self.model) raise_value("the subgraph belongs to another model");
    if (g.get().is_root()) raise_value("the root graph is not a subgraph; it cannot be removed");
    return g.get();
  }
  const std::string name = name_or_graph.cast<std::string>();
  sdk::Graph* g = root.find_subgraph(name);
  if (!g) raise_lookup("no subgraph named '" + name + "' in '" + root.name() + "'");
  return *g;
}

// The subgraphs of `g`: for the root every registered one (GE's GetAllSubgraphs), for a subgraph the ones its
// nodes own.
py::list subgraphs_of(const GraphRef& self) {
  const sdk::Graph& g = self.get();
  py::list out;
  for (const sdk::Graph* s : self.model->root->subgraphs()) {
    if (g.is_root() || s->parent_graph() == &g) out.append(ref_of(self.model, *s));
  }
  return out;
}

GraphRef add_subgraph(const GraphRef& self, const std::string& name, const NodeRef& parent,
                      const std::string& attribute) {
  sdk::Graph& root = *self.model->root;
  if (parent.model != self.model) raise_value("the parent node belongs to another model");
  sdk::Node& node = parent.get();
  if (attribute.empty()) raise_value("add_subgraph: the attribute name is empty");
  if (const sdk::AttrValue* a = node.attrs().get(attribute); a && a->as_graph())
    raise_value("node '" + node.name() + "' already has a subgraph in attribute '" + attribute + "'");
  if (root.find_subgraph(name)) raise_value("a subgraph named '" + name + "' exists already");
  sdk::Graph* g = root.add_subgraph(name, &node);
  if (!g) raise_value("cannot add subgraph '" + name + "'");
  node.attrs().set(attribute, sdk::AttrValue::OfGraph(g));
  return ref_of(self.model, *g);
}

NodeRef add_node(const GraphRef& self, const std::string& type, const std::string& name, size_t inputs,
                 size_t outputs) {
  sdk::Graph& g = self.get();
  const std::string n = name.empty() ? g.unique_node_name(type) : name;
  sdk::Node* node = g.add_node(n, type, inputs, 0);
  if (!node) raise_value("a node named '" + n + "' exists already in '" + g.name() + "'");
  for (size_t o = 0; o < outputs; ++o) node->add_output({}, outputs == 1 ? n : n + ":" + std::to_string(o));
  return ref_of(self.model, *node);
}

sdk::Node& node_in(const GraphRef& self, const py::object& name_or_node) {
  if (py::isinstance<NodeRef>(name_or_node)) {
    const NodeRef& n = name_or_node.cast<const NodeRef&>();
    sdk::Node& node = n.get();
    if (n.model != self.model || node.owner() != &self.get())
      raise_value("node '" + node.name() + "' is not in graph '" + self.get().name() + "'");
    return node;
  }
  const std::string name = name_or_node.cast<std::string>();
  sdk::Node* node = self.get().find_node(name);
  if (!node) raise_lookup("no node named '" + name + "' in graph '" + self.get().name() + "'");
  return *node;
}

void bind_value_info(py::module_& m) {
  py::class_<ValueInfo>(m, "ValueInfo", "A value's name, element type and shape (ints, symbols, None).")
      .def_readonly("name", &ValueInfo::name)
      .def_readonly("dtype", &ValueInfo::dtype)
      .def_readonly("kind", &ValueInfo::kind)
      .def_readonly("shape", &ValueInfo::shape)
      .def("__repr__", &ValueInfo::repr);
}

// The nodes of a graph as a sized, iterable, name-indexed collection.
struct NodeList {
  GraphRef graph;
};

void bind_node_list(py::module_& m) {
  py::class_<NodeList>(m, "NodeList")
      .def("__len__", [](const NodeList& l) { return l.graph.get().num_nodes(); })
      .def("__iter__",
           [](const NodeList& l) {
             py::list out;
             for (const sdk::Node* n : l.graph.get().nodes()) out.append(ref_of(l.graph.model, *n));
             return py::iter(out);
           })
      .def("__contains__", [](const NodeList& l,
                              const std::string& name) { return l.graph.get().find_node(name) != nullptr; })
      .def("__getitem__", [](const NodeList& l, const std::string& name) {
        const sdk::Node* n = l.graph.get().find_node(name);
        if (!n) raise_lookup("no node named '" + name + "' in graph '" + l.graph.get().name() + "'");
        return ref_of(l.graph.model, *n);
      });
}

py::list decisions_of(const NodeRef& self) {
  const sdk::Node& n = self.get();
  py::list out;
  for (const sdk::Decision& d : self.model->decisions) {
    if (d.graph != n.owner()->name() || std::find(d.nodes.begin(), d.nodes.end(), n.name()) == d.nodes.end())
      continue;
    py::dict e;
    e["code"] = std::string(sdk::to_string(d.code));
    e["engine"] = d.engine;
    e["detail"] = d.detail;
    e["final"] = d.final;
    e["stage"] = d.stage;
    out.append(e);
  }
  return out;
}

py::list node_inputs(const NodeRef& self) {
  const sdk::Node& n = self.get();
  py::list out;
  for (size_t i = 0; i < n.num_inputs(); ++i) {
    const sdk::OutPort p = n.input(i);
    if (p.valid())
      out.append(info_of(p.node->output_name(p.index), p.node->output_desc(p.index)));
    else
      out.append(py::none());
  }
  return out;
}

void bind_node(py::module_& m) {
  py::class_<NodeRef>(m, "Node", "A node of a graph; raises LookupError once the node is removed.")
      .def_property_readonly("name", [](const NodeRef& r) { return r.get().name(); })
      .def_property_readonly("type", [](const NodeRef& r) { return r.get().type(); })
      .def_property_readonly("graph", [](const NodeRef& r) { return ref_of(r.model, *r.get().owner()); })
      .def_property_readonly("inputs", &node_inputs)
      .def_property_readonly("outputs",
                             [](const NodeRef& r) {
                               const sdk::Node& n = r.get();
                               std::vector<ValueInfo> out;
                               for (size_t o = 0; o < n.num_outputs(); ++o)
                                 out.push_back(info_of(n.output_name(o), n.output_desc(o)));
                               return out;
                             })
      .def_property_readonly("input_nodes",
                             [](const NodeRef& r) {
                               py::list out;
                               for (const sdk::OutPort& p : r.get().inputs())
                                 out.append(p.valid() ? py::cast(ref_of(r.model, *p.node)) : py::none());
                               return out;
                             })
      .def_property_readonly("attrs",
                             [](const NodeRef& r) {
                               py::dict d;
                               for (const auto& [k, v] : r.get().attrs().entries())
                                 d[py::str(k)] = attr_to_python(r.model, v);
                               return d;
                             })
      .def_property_readonly("subgraphs",
                             [](const NodeRef& r) {
                               py::list out;
                               for (const sdk::Graph* g : r.get().subgraphs())
                                 out.append(ref_of(r.model, *g));
                               return out;
                             })
      .def_property_readonly("engine",
                             [](const NodeRef& r) -> py::object {
                               std::string e = r.get().attrs().get_string(sdk::attr::kOpEngineName);
                               return e.empty() ? py::object(py::none()) : py::object(py::str(e));
                             })
      .def_property_readonly("decisions", &decisions_of)
      .def("__eq__", [](const NodeRef& a, const NodeRef& b) { return &a.get() == &b.get(); })
      .def("__hash__", [](const NodeRef& r) { return std::hash<const void*>()(&r.get()); })
      .def("__repr__",
           [](const NodeRef& r) { return "<Node '" + r.get().name() + "' " + r.get().type() + ">"; });
}

void bind_graph_inspection(py::class_<GraphRef>& c) {
  c.def_property_readonly("name", [](const GraphRef& r) { return r.get().name(); })
      .def_property_readonly("is_root", [](const GraphRef& r) { return r.get().is_root(); })
      .def_property_readonly("parent_node",
                             [](const GraphRef& r) -> py::object {
                               const sdk::Node* p = r.get().parent_node();
                               return p ? py::cast(ref_of(r.model, *p)) : py::none();
                             })
      .def_property_readonly("inputs", [](const GraphRef& r) { return graph_inputs(r.get()); })
      .def_property_readonly("outputs", [](const GraphRef& r) { return graph_outputs(r.get()); })
      .def_property_readonly("nodes",
                             [](const GraphRef& r) {
                               r.get();  // a removed graph raises here, not on first use of the list
                               return NodeList{r};
                             })
      .def_property_readonly("subgraphs", &subgraphs_of)
      .def_property_readonly("total_nodes", [](const GraphRef& r) { return r.get().total_nodes(); })
      .def("get_subgraph",
           [](const GraphRef& r, const std::string& name) -> py::object {
             const sdk::Graph* g = r.model->root->find_subgraph(name);
             return g ? py::cast(ref_of(r.model, *g)) : py::none();
           })
      .def("verify", [](const GraphRef& r) { check(sdk::verify(*r.model->root)); })
      .def("to_json",
           [](const GraphRef& r) {
             std::string json;
             check(graph_to_json(*r.model->root, &json));
             return json;
           })
      .def("to_dot", [](const GraphRef& r) { return graph_to_dot(*r.model->root); })
      .def("to_om",
           [](const GraphRef& r) {
             std::string bytes;
             check(serialize_om(*r.model->root, &bytes));
             return py::bytes(bytes);
           })
      .def("copy",
           [](const GraphRef& r) {
             return GraphRef{copy_model(*r.model), {}};
           })
      .def("_model", [](const GraphRef& r) { return r.model; })
      .def("__eq__", [](const GraphRef& a, const GraphRef& b) { return &a.get() == &b.get(); })
      .def("__hash__", [](const GraphRef& r) { return std::hash<const void*>()(&r.get()); })
      .def("__repr__", [](const GraphRef& r) {
        return "<Graph '" + r.get().name() + "': " + std::to_string(r.get().num_nodes()) + " nodes>";
      });
}

void bind_graph_editing(py::class_<GraphRef>& c) {
  c.def("add_subgraph", &add_subgraph, py::arg("name"), py::arg("parent_node"), py::arg("attribute"))
      .def("remove_subgraph",
           [](const GraphRef& r, const py::object& which) {
             r.model->root->remove_subgraph(&resolve_graph(which, r));
           })
      .def("add_node", &add_node, py::arg("type"), py::arg("name") = "", py::arg("inputs") = 0,
           py::arg("outputs") = 1)
      .def("remove_node", [](const GraphRef& r, const py::object& n) { r.get().remove_node(&node_in(r, n)); })
      .def(
          "add_edge",
          [](const GraphRef& r, const py::object& src, int src_index, const py::object& dst, int dst_index) {
            sdk::Node& s = node_in(r, src);
            sdk::Node& d = node_in(r, dst);
            if (src_index < 0 || static_cast<size_t>(src_index) >= s.num_outputs())
              raise_value("node '" + s.name() + "' has no output " + std::to_string(src_index));
            if (dst_index < 0 || static_cast<size_t>(dst_index) >= d.num_inputs())
              raise_value("node '" + d.name() + "' has no input " + std::to_string(dst_index));
            check(r.get().add_edge({&s, src_index}, {&d, dst_index}));
          },
          py::arg("src"), py::arg("src_index"), py::arg("dst"), py::arg("dst_index"))
      .def(
          "remove_edge",
          [](const GraphRef& r, const py::object& src, int src_index, const py::object& dst, int dst_index) {
            check(r.get().remove_edge({&node_in(r, src), src_index}, {&node_in(r, dst), dst_index}));
          },
          py::arg("src"), py::arg("src_index"), py::arg("dst"), py::arg("dst_index"));
}

}  // namespace

py::object value_info(const std::string& name, const sdk::TensorDesc& desc) {
  return py::cast(info_of(name, desc));
}

sdk::Graph& GraphRef::get() const {
  if (name.empty()) return *model->root;
  sdk::Graph* g = model->root->find_subgraph(name);
  if (!g) raise_lookup("subgraph '" + name + "' was removed");
  return *g;
}

sdk::Node& NodeRef::get() const {
  sdk::Graph* g = graph.empty() ? model->root.get() : model->root->find_subgraph(graph);
  if (!g) raise_lookup("node '" + node + "': its graph '" + graph + "' was removed");
  sdk::Node* n = g->find_node(node);
  if (!n) raise_lookup("node '" + node + "' was removed from graph '" + g->name() + "'");
  return *n;
}

GraphRef ref_of(const std::shared_ptr<Model>& model, const sdk::Graph& g) {
  return GraphRef{model, g.is_root() ? std::string() : g.name()};
}

NodeRef ref_of(const std::shared_ptr<Model>& model, const sdk::Node& n) {
  return NodeRef{model, n.owner()->is_root() ? std::string() : n.owner()->name(), n.name()};
}

std::shared_ptr<Model> model_from_om(const std::string& bytes, const std::string& source) {
  auto m = std::make_shared<Model>();
  m->source = source;
  sdk::Status s;
  {
    py::gil_scoped_release release;
    s = parse_om(bytes, source, &m->root);
  }
  check(s);
  return m;
}

std::shared_ptr<Model> copy_model(const Model& m) {
  std::string bytes;
  check(serialize_om(*m.root, &bytes));
  auto copy = model_from_om(bytes, m.source);
  copy->decisions = m.decisions;
  return copy;
}

void register_graph(py::module_& m) {
  bind_value_info(m);
  bind_node_list(m);
  bind_node(m);
  py::class_<GraphRef> graph(m, "Graph", "A model's root graph or one of its subgraphs.");
  bind_graph_inspection(graph);
  bind_graph_editing(graph);
}

}  // namespace graphsplit::python

//===- Report.cpp - the compile report as JSON ----------------------------===//

#include "tools/driver/Report.h"

#include "codegen/bundle/Bundle.h"
#include "lib/support/Json.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cmath>

namespace sluice {
namespace {

/// An attribute the passes record (sluice.quantization ...) as JSON:
/// dictionaries, arrays, strings, numbers and booleans.
void writeAttributeJson(llvm::json::OStream &json, mlir::Attribute attr) {
  if (auto dict = mlir::dyn_cast<mlir::DictionaryAttr>(attr)) {
    json.object([&] {
      for (mlir::NamedAttribute entry : dict) {
        json.attributeBegin(entry.getName().strref());
        writeAttributeJson(json, entry.getValue());
        json.attributeEnd();
      }
    });
  } else if (auto array = mlir::dyn_cast<mlir::ArrayAttr>(attr)) {
    json.array([&] {
      for (mlir::Attribute a : array)
        writeAttributeJson(json, a);
    });
  } else if (auto str = mlir::dyn_cast<mlir::StringAttr>(attr)) {
    json.value(jsonText(str.str()));
  } else if (auto b = mlir::dyn_cast<mlir::BoolAttr>(attr)) {
    json.value(b.getValue());
  } else if (auto i = mlir::dyn_cast<mlir::IntegerAttr>(attr)) {
    json.value(i.getInt());
  } else if (auto f = mlir::dyn_cast<mlir::FloatAttr>(attr)) {
    double v = f.getValueAsDouble();
    if (std::isfinite(v))
      json.value(v);
    else
      json.value(nullptr);
  } else {
    std::string text;
    llvm::raw_string_ostream os(text);
    attr.print(os);
    json.value(text);
  }
}

/// The emitted program: launches, memory, grid, experts, collectives,
/// the target's keys and each step.
void writeProgram(llvm::json::OStream &json, const CompileReport::Program &program) {
  const codegen::ModelFacts &facts = *program.facts;
  json.attribute("kernels", program.kernels);
  json.attribute("library_calls", program.libraryCalls);
  json.attribute("arena_bytes", facts.arenaBytes);
  std::vector<int64_t> perRank = facts.weightsBytesPerRank();
  int64_t totalWeights = 0;
  for (int64_t b : perRank)
    totalWeights += b;
  json.attribute("weights_bytes", totalWeights);
  json.attribute("world_size", facts.worldSize);
  json.attributeArray("weights_bytes_per_rank", [&] {
    for (int64_t b : perRank)
      json.value(b);
  });
  codegen::writeParallel(json, facts);
  codegen::writeMoe(json, facts);
  json.attributeArray("collectives", [&] {
    for (const auto &c : facts.collectives)
      json.object([&] {
        json.attribute("op", jsonText(c.op));
        json.attribute("count", c.count);
        json.attribute("bytes", c.bytes);
      });
  });
  json.attribute("launches", program.kernels + program.libraryCalls);
  for (const auto &[key, value] : program.targetStrings)
    json.attribute(key, jsonText(value));
  for (const auto &[key, value] : program.targetCounts)
    json.attribute(key, value);
  json.attributeArray("steps", [&] {
    for (const auto &st : *program.steps)
      json.object([&] {
        json.attribute("name", jsonText(st.name));
        json.attribute("kind", jsonText(st.kind));
        json.attribute("op", jsonText(st.op));
        json.attribute("compute", jsonText(st.compute));
        writeJsonStrings(json, "ops", st.ops);
        writeJsonStrings(json, "nodes", st.nodes);
      });
  });
}

/// A bundle of shape variants: the totals, then each variant.
void writeVariants(llvm::json::OStream &json, const CompileReport::Variants &variants) {
  int64_t kernels = 0, library = 0, arena = 0;
  for (const auto &v : variants.variants) {
    kernels += v.kernels;
    library += v.libraryCalls;
    arena = std::max(arena, v.arenaBytes);
  }
  json.attribute("kernels", kernels);
  json.attribute("library_calls", library);
  json.attribute("launches", kernels + library);
  json.attribute("arena_bytes", arena);
  json.attribute("weights_bytes", variants.weightsBytes);
  json.attribute("weights_bytes_unshared", variants.weightsBytesUnshared);
  json.attribute("world_size", 1);
  json.attributeArray("variants", [&] {
    for (const auto &v : variants.variants)
      json.object([&] {
        json.attribute("entry", jsonText(v.entry));
        json.attributeObject("shapes", [&] {
          for (const auto &input : v.inputs)
            json.attributeArray(input.name, [&] {
              for (int64_t d : input.shape)
                json.value(d);
            });
        });
        json.attribute("kernels", v.kernels);
        json.attribute("library_calls", v.libraryCalls);
        json.attribute("launches", v.kernels + v.libraryCalls);
        json.attribute("arena_bytes", v.arenaBytes);
      });
  });
}

} // namespace

std::string CompileReport::json() const {
  std::string text;
  llvm::raw_string_ostream file(text);
  llvm::json::OStream json(file, /*IndentSize=*/2);
  json.object([&] {
    json.attribute("model", jsonText(model));
    json.attribute("target", jsonText(target));
    json.attribute("precision", jsonText(precision));
    if (plan)
      parallel::writePlanJson(json, *plan, planRequest);
    if (variants)
      writeVariants(json, *variants);
    if (program)
      writeProgram(json, *program);
    for (const auto &[key, attr] : recorded) {
      json.attributeBegin(key);
      writeAttributeJson(json, attr);
      json.attributeEnd();
    }
    writeJsonStrings(json, "remarks", remarks);
    writeJsonStrings(json, "warnings", warnings);
    if (!bundle.empty())
      json.attribute("bundle", jsonText(bundle));
    json.attributeArray("phases", [&] {
      for (const auto &timing : phases)
        json.object([&] {
          json.attribute("name", jsonText(timing.name));
          json.attributeBegin("ms");
          writeJsonFixed3(json, timing.milliseconds);
          json.attributeEnd();
        });
    });
    if (cache)
      json.attributeObject("cache", [&] {
        json.attribute("hit", cache->hit);
        json.attribute("key", cache->key);
        json.attribute("dir", jsonText(cache->dir));
        if (cache->hit)
          json.attribute("us", cache->microseconds);
      });
  });
  file << "\n";
  return text;
}

std::string reportOfCacheHit(const std::string &cachedText, const std::string &model,
                             const std::string &bundle, const CompileReport::CacheEntry &hit) {
  llvm::json::Value value = llvm::json::Object{};
  if (auto parsed = llvm::json::parse(cachedText))
    value = std::move(*parsed);
  else
    llvm::consumeError(parsed.takeError());
  if (llvm::json::Object *object = value.getAsObject()) {
    (*object)["model"] = jsonText(model);
    (*object)["bundle"] = jsonText(bundle);
    (*object)["cache"] = llvm::json::Object{
        {"hit", true}, {"key", hit.key}, {"dir", jsonText(hit.dir)}, {"us", hit.microseconds}};
  }
  std::string text;
  llvm::raw_string_ostream out(text);
  out << llvm::formatv("{0:2}", value) << "\n";
  return text;
}

} // namespace sluice

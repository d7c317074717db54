//===- Locations.cpp - ONNX node locations in messages --------------------===//

#include "lib/support/Locations.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>

using namespace mlir;

namespace sluice {

Location nodeLocation(MLIRContext &context, StringRef file, StringRef nodeName,
                      StringRef opType, int opset) {
  auto name = NameLoc::get(StringAttr::get(&context, nodeName));
  auto fileLoc = FileLineColLoc::get(&context, file, 0, 0);
  auto metadata =
      StringAttr::get(&context, (opType + ":" + Twine(opset)).str());
  return FusedLoc::get(&context, {name, fileLoc}, metadata);
}

std::string describeLocation(Location loc) {
  if (auto fused = dyn_cast<FusedLoc>(loc)) {
    auto metadata = dyn_cast_or_null<StringAttr>(fused.getMetadata());
    if (metadata && fused.getLocations().size() == 2) {
      auto name = dyn_cast<NameLoc>(fused.getLocations()[0]);
      auto file = dyn_cast<FileLineColLoc>(fused.getLocations()[1]);
      if (name && file) {
        auto [opType, opset] = metadata.getValue().split(':');
        return (file.getFilename().getValue() + ": node '" +
                name.getName().getValue() + "' (" + opType + ", opset " +
                opset + ")")
            .str();
      }
    }
  }
  if (auto file = dyn_cast<FileLineColLoc>(loc)) {
    if (file.getLine() == 0)
      return file.getFilename().str();
  }
  // An op fused from several nodes (a recognized composite): its first
  // node and how many more.
  if (isa<FusedLoc>(loc)) {
    std::vector<std::string> names = onnxNodeNames(loc);
    std::string fileName;
    loc->walk([&](Location inner) {
      auto file = dyn_cast<FileLineColLoc>(inner);
      if (file && fileName.empty())
        fileName = file.getFilename().str();
      return WalkResult::advance();
    });
    if (!names.empty()) {
      std::string s = fileName.empty() ? "" : fileName + ": ";
      s += "node '" + names.front() + "'";
      if (names.size() > 1)
        s += " (and " + std::to_string(names.size() - 1) + " more)";
      return s;
    }
  }
  std::string s;
  llvm::raw_string_ostream os(s);
  loc.print(os);
  return s;
}

std::vector<std::string> onnxNodeNames(Location loc) {
  std::vector<std::string> names;
  loc->walk([&](Location inner) {
    if (auto name = dyn_cast<NameLoc>(inner)) {
      std::string n = name.getName().str();
      if (std::find(names.begin(), names.end(), n) == names.end())
        names.push_back(std::move(n));
    }
    return WalkResult::advance();
  });
  return names;
}

std::string describeOp(Operation *op) {
  std::string s = "'" + op->getName().getStringRef().str() + "'";
  std::vector<std::string> names = onnxNodeNames(op->getLoc());
  if (!names.empty())
    s += " (node '" + names.front() + "')";
  return s;
}

std::string firstNodeName(Operation *op) {
  std::vector<std::string> names = onnxNodeNames(op->getLoc());
  return names.empty() ? describeLocation(op->getLoc()) : names.front();
}

} // namespace sluice

//===- RecognizePasses.cpp - the recognize phase's passes -----------------===//
//
// Each recognize pass applies one file's patterns and nothing else
// (RecognizePass, Patterns.h); the patterns and what they match are in
// RecognizeNorms.cpp, RecognizeActivations.cpp, RecognizeAttention.cpp,
// RecognizeMoe.cpp and RecognizeLinear.cpp.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"
#include "passes/recognize/Patterns.h"

namespace sluice {
#define GEN_PASS_DEF_RECOGNIZEACTIVATIONSPASS
#define GEN_PASS_DEF_RECOGNIZEATTENTIONPASS
#define GEN_PASS_DEF_RECOGNIZELINEARPASS
#define GEN_PASS_DEF_RECOGNIZEMOEPASS
#define GEN_PASS_DEF_RECOGNIZENORMSPASS
#include "passes/Passes.h.inc"
} // namespace sluice

using namespace sluice;

namespace {

struct RecognizeActivationsPass
    : RecognizePass<RecognizeActivationsPass, impl::RecognizeActivationsPassBase,
                    populateRecognizeActivationsPatterns> {};
struct RecognizeAttentionPass
    : RecognizePass<RecognizeAttentionPass, impl::RecognizeAttentionPassBase,
                    populateRecognizeAttentionPatterns> {};
struct RecognizeLinearPass
    : RecognizePass<RecognizeLinearPass, impl::RecognizeLinearPassBase,
                    populateRecognizeLinearPatterns> {};
struct RecognizeMoePass
    : RecognizePass<RecognizeMoePass, impl::RecognizeMoePassBase, populateRecognizeMoePatterns> {};
struct RecognizeNormsPass
    : RecognizePass<RecognizeNormsPass, impl::RecognizeNormsPassBase,
                    populateRecognizeNormsPatterns> {};

} // namespace

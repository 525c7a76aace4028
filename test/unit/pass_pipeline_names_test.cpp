// Pass names (passes/pipeline.h): one spelling in the pipeline, the older "recognise-" spellings
// still accepted wherever a name is given (--disable-pass, --dump-ir-after, createPass), and an
// unknown name still an error. Whether a pass ran is read off the graph: the erf GELU below is
// one Gelu node after recognize-gelu and five nodes without it.
#include "gelu_test_graphs.h"
#include "sinter/ir/graph.h"
#include "sinter/ir/parser.h"
#include "sinter/passes/pipeline.h"
#include "sinter/support/error.h"

#include <gtest/gtest.h>

#include <sstream>

using namespace sinter;

namespace {

std::unique_ptr<Graph> erfGelu() { return parseGraph(sinter::testing::erfGeluText()); }

int64_t nodesAfter(const PipelineOptions &options) {
  std::unique_ptr<Graph> graph = erfGelu();
  runPipeline(*graph, options);
  return graph->numNodes();
}

} // namespace

TEST(PipelineNames, OneSpellingInThePipeline) {
  for (const PipelineEntry &entry : defaultPipeline())
    EXPECT_EQ(entry.name.find("recognise"), std::string::npos) << entry.name;
  EXPECT_NE(describePipeline().find("recognize-gelu"), std::string::npos);
  EXPECT_NE(describePipeline().find("recognize-layer-normalization"), std::string::npos);
}

TEST(PipelineNames, OlderSpellingsAreAcceptedAliases) {
  EXPECT_EQ(canonicalPassName("recognise-gelu"), "recognize-gelu");
  EXPECT_EQ(canonicalPassName("recognise-layer-normalization"), "recognize-layer-normalization");
  EXPECT_EQ(canonicalPassName("canonicalize"), "canonicalize");
  EXPECT_NE(createPass("recognise-gelu"), nullptr);
  EXPECT_NE(createPass("recognise-layer-normalization"), nullptr);

  EXPECT_EQ(nodesAfter(PipelineOptions{}), 1); // Gelu
  for (const char *name : {"recognize-gelu", "recognise-gelu"}) {
    PipelineOptions options;
    options.disabled = {name};
    EXPECT_EQ(nodesAfter(options), 5) << name;
  }
  PipelineOptions dump;
  std::ostringstream out;
  dump.dumpAfter = "recognise-gelu";
  dump.dumpStream = &out;
  nodesAfter(dump);
  EXPECT_NE(out.str().find("// IR after recognize-gelu"), std::string::npos) << out.str();
}

TEST(PipelineNames, UnknownNamesAreStillErrors) {
  PipelineOptions options;
  options.disabled = {"recognise-everything"};
  std::unique_ptr<Graph> graph = erfGelu();
  try {
    runPipeline(*graph, options);
    FAIL() << "an unknown pass name was accepted";
  } catch (const UserError &error) {
    EXPECT_NE(std::string(error.what()).find("unknown pass 'recognise-everything'"), std::string::npos)
        << error.what();
  }
}

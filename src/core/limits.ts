/**
 * The caps on what a person hands the playground — checkpoint folders, tokenizers, chat
 * templates, experiment files, recipes and run logs — in one table, so the readers, the page, the CLI and the docs
 * (docs/models.md, "Input limits") agree. Each cap is far above what a real file of its kind
 * needs and far below what would freeze a page or exhaust a process; a cap that depends on the
 * model (a tokenizer's size, a safetensors header's) is a function of what config.json says.
 *
 * Not here: the checks themselves (each reader applies its caps and names them in its message).
 */

/** Deepest JSON nesting read from any file (real tokenizers nest fewer than 10 levels). */
export const MAX_JSON_DEPTH = 64;

/** Largest config-sized JSON file of a checkpoint folder (config.json, tokenizer_config.json, generation_config.json, the shard index). */
export const MAX_SMALL_JSON_BYTES = 4 * 2 ** 20;

/**
 * Largest tokenizer.json for a vocabulary of `vocabSize` tokens: 4 MiB plus 1 KiB per token (real
 * ones take 60–130 bytes per token, merges included).
 */
export function maxTokenizerBytes(vocabSize: number): number {
  return 4 * 2 ** 20 + 1024 * vocabSize;
}

/**
 * Largest safetensors header (bytes) of a checkpoint shard holding at most `tensors` tensors: 64 KiB
 * (metadata) plus 1 KiB per tensor (a real entry is under 200 bytes).
 */
export function maxCheckpointHeaderBytes(tensors: number): number {
  return 64 * 1024 + 1024 * tensors;
}

/** Longest list a chat template may build with range() (a chat has far fewer turns). */
export const TEMPLATE_MAX_RANGE = 10_000;
/** Evaluation steps (expressions, statements, loop bodies) one rendering of a chat template may take (a real one takes tens per message). */
export const TEMPLATE_MAX_STEPS = 50_000;
/** Longest string (characters) a chat template may build, its output included. */
export const TEMPLATE_MAX_CHARS = 1 << 20;

/**
 * Experiment files: every prefix of the compressed data may inflate to at most RATIO times its
 * length plus SLACK bytes (real ones inflate a few times at most: f64 weights and metrics barely
 * compress, the JSON header about tenfold), so a bomb is refused after a few kilobytes of its input.
 */
export const INFLATE_RATIO = 32;
export const INFLATE_SLACK = 2 ** 20;

/**
 * Longest text a checkpoint's tokenizer encodes in one call (characters). A pre-tokenizer pattern
 * that passes the load checks (src/model/regexSafety.ts) may still take ~n² steps to split n
 * characters, so a hostile one could slow its seat down by the square of a long text; a seat's
 * context is at most 1,024 tokens, and what it encodes (the task's prompt in its chat template,
 * earlier messages) stays far under 16 characters a token.
 */
export const TOKENIZER_MAX_ENCODE_CHARS = 16_384;

/**
 * An ONNX graph's counts, checked as the protobuf is read and before each item is decoded. The
 * exported decoders have tens to about a hundred nodes and initializers per layer (so even a
 * 126-layer model stays near 10,000–20,000; onnxruntime-genai's fused graphs far fewer), one level
 * of `If` (a merged decoder's two branches), two graph inputs and outputs per layer's cache, and
 * lists (a node's inputs, an attribute's values, a tensor's dims) of a few hundred items at most;
 * the caps sit 5× or more above that.
 */
export const ONNX_LIMITS = {
  /** Nodes of the graph and of every subgraph together. */
  nodes: 100_000,
  /** Initializers of the graph and of every subgraph together. */
  initializers: 100_000,
  /** Graph inputs and outputs together. */
  values: 10_000,
  /** Subgraphs nested in one another (an `If` inside an `If`'s branch is depth 2). */
  subgraphDepth: 8,
  /** Items of one list: a node's inputs, outputs or attributes, an attribute's ints / floats / strings / graphs, a tensor's dims. */
  list: 65_536,
} as const;

/** Time one input check may take in its worker before it is stopped (checkpoint head, experiment file). */
export const CHECK_TIME_MS = 10_000;
/**
 * More time an experiment file's check gets per MiB of the file: its legitimate size reaches tens
 * of MB (weights and optimizer state as f64) and its check's time grows with it, while a bomb is
 * refused by its first kilobytes whatever its size (INFLATE_RATIO) and MAX_EXPERIMENT_BYTES caps it.
 */
export const CHECK_TIME_PER_MIB_MS = 1_000;
/** Heap a check's worker may grow to in Node (the page bounds memory with the size caps above). */
export const CHECK_HEAP_MIB = 1024;

/** Caps on one imported text file (a recipe or a run log), checked by one scan before any parse (src/bridge/limits.ts). */
export interface InputLimits {
  /** Most characters (UTF-16 units) of text. */
  readonly chars: number;
  /** Most lines. */
  readonly lines: number;
  /** Most `key:` / `"key":` occurrences. */
  readonly keys: number;
  /** Most characters in one line. */
  readonly lineChars: number;
}

/** A SAT-style recipe: a few dozen keys in a few kilobytes, lines of under a hundred characters; generous caps. */
export const RECIPE_LIMITS: InputLimits = { chars: 256 * 1024, lines: 5_000, keys: 5_000, lineChars: 16 * 1024 };

/**
 * A run log: a long real run logs ~100 metrics per step for tens of thousands of steps, a line of
 * verl's file logger a few kilobytes (a W&B JSON array may be one line of the whole history).
 */
export const LOG_LIMITS: InputLimits = { chars: 64 * 1024 * 1024, lines: 2_000_000, keys: 20_000_000, lineChars: 16 * 1024 * 1024 };

/** What one run log may hold once parsed, checked before it leaves the check's worker (real runs: a few hundred keys, tens of thousands of steps). */
export const RUN_LOG_MAX = {
  /** Metrics in one step. */
  keysPerStep: 10_000,
  /** Distinct metric keys in the whole log. */
  keys: 10_000,
  /** Steps. */
  steps: 500_000,
  /** Steps × distinct keys: the cells of the columns the page receives (8 bytes each, 128 MiB at most; a 60 MB log of 24,000 steps × 100 metrics has 2.4 M). */
  cells: 2 ** 24,
} as const;

/**
 * What a real run's generation dumps may hold (beside LOG_LIMITS for each file): verl writes one
 * file a step of batch × n rows with five fields and a few reward extras, so a long run's folder
 * holds tens of thousands of rows in tens of MB.
 */
export const GENERATION_MAX = {
  /** Characters in all the files of one import together (the page keeps every row's text). */
  chars: 64 * 1024 * 1024,
  /** Rows (episodes' replies) in all the files together. */
  rows: 500_000,
  /** `"key":` pairs in one line (one row): counted on its text before JSON.parse. */
  keysPerRow: 1_000,
} as const;

/** Deepest nesting of a recipe YAML (flow `[`/`{` and block levels; a real recipe nests 4). */
export const RECIPE_MAX_DEPTH = 32;

/** "1.5 MiB", "300 bytes". */
export function formatSize(n: number): string {
  if (n >= 2 ** 30) return `${(n / 2 ** 30).toFixed(2)} GiB`;
  if (n >= 2 ** 20) return `${(n / 2 ** 20).toFixed(1)} MiB`;
  if (n >= 2 ** 10) return `${(n / 2 ** 10).toFixed(1)} KiB`;
  return `${n} bytes`;
}

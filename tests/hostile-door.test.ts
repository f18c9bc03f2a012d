/**
 * The door, held by scanning the source (convention 19, docs/models.md "Input limits"):
 *   - every regular expression in src/ — literals and `new RegExp` of literal text — is judged by
 *     the project's backtracking check (src/model/regexSafety.ts): none may backtrack
 *     exponentially, and one that may cost more than linear time runs only on text whose length
 *     is capped (each listed below with the cap that bounds it);
 *   - the readers of users' files (the parsers of experiment files, ONNX graphs, run logs,
 *     generation dumps, recipes, and a checkpoint's config.json, tokenizer, chat template and
 *     safetensors weights) are called only from the door's job table (src/workers/inputJobs.ts) or from code
 *     that runs after the door has checked the same bytes (each caller listed with why), so a new
 *     caller — a reader beside the door — fails here until it is reviewed.
 * The source is read with the TypeScript compiler's parser, so strings and comments that look
 * like patterns or calls are not counted.
 *
 * Not here: the readers' own refusals (tests/hostile-*.test.ts).
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { backtrackingRisk } from '../src/model/regexSafety';

const ROOT = join(import.meta.dirname, '..');

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((n) => {
    const p = join(dir, n);
    return statSync(p).isDirectory() ? sources(p) : /\.tsx?$/.test(n) && !n.endsWith('.d.ts') ? [p] : [];
  });
}
const FILES = sources(join(ROOT, 'src')).map((p) => ({ path: relative(ROOT, p), ast: ts.createSourceFile(p, readFileSync(p, 'utf8'), ts.ScriptTarget.Latest, true) }));

/** Every node of `ast`, visited with an explicit stack. */
function* walk(ast: ts.Node): Generator<ts.Node> {
  const stack: ts.Node[] = [ast];
  while (stack.length > 0) {
    const n = stack.pop()!;
    yield n;
    n.forEachChild((c) => void stack.push(c));
  }
}

/** The pattern text of a regex literal, or of `new RegExp(<string or template literal>)` with its substitutions' constant strings folded in where they are `const X = '…'` of the same file. */
function patterns(ast: ts.SourceFile): { source: string; line: number }[] {
  const consts = new Map<string, string>();
  for (const n of walk(ast)) if (ts.isVariableDeclaration(n) && ts.isIdentifier(n.name) && n.initializer && ts.isStringLiteral(n.initializer)) consts.set(n.name.text, n.initializer.text);
  const out: { source: string; line: number }[] = [];
  const line = (n: ts.Node) => ast.getLineAndCharacterOfPosition(n.getStart()).line + 1;
  for (const n of walk(ast)) {
    if (n.kind === ts.SyntaxKind.RegularExpressionLiteral) {
      const text = n.getText();
      out.push({ source: text.slice(1, text.lastIndexOf('/')), line: line(n) });
    } else if (ts.isNewExpression(n) && ts.isIdentifier(n.expression) && n.expression.text === 'RegExp' && n.arguments?.[0]) {
      const a = n.arguments[0];
      if (ts.isStringLiteral(a) || ts.isNoSubstitutionTemplateLiteral(a)) out.push({ source: a.text, line: line(n) });
      else if (ts.isTemplateExpression(a)) {
        let s = a.head.text;
        let known = true;
        for (const span of a.templateSpans) {
          const v = ts.isIdentifier(span.expression) ? consts.get(span.expression.text) : undefined;
          if (v === undefined) known = false;
          s += (v ?? '') + span.literal.text;
        }
        if (known) out.push({ source: s, line: line(n) });
      }
    }
  }
  return out;
}

/**
 * Patterns the check refuses, each reviewed, with why it is linear or what bounds its text. The
 * check is built for tokenizer patterns and is conservative: it does not see that two digit runs
 * apart by a literal neither can match (`\d+\/\d+`) split a run one way only, nor that the
 * alternatives `[^"\\]` and `\\.` start with different characters. A pattern not listed that the
 * check refuses fails the test; a listed one the source no longer has fails it too.
 */
const SEPARATED = 'each unbounded run is followed by a literal it cannot match, so a text splits one way: linear per start, and the pattern is anchored';
const REVIEWED: Readonly<Record<string, string>> = {
  'src/app/charts/formulas.ts: ^(-?[\\d.]+)e(-?\\d+)$': 'runs on Number.prototype.toExponential output, never on a file',
  'src/app/onnxFiles.ts: ^(?:[^/]+\\.json|(?:onnx\\/)?[^/]+\\.onnx(?:_data(?:_\\d+)?|\\.data)?)$': `runs on one name of a picked folder (a path component, at most 255 bytes on common file systems); ${SEPARATED}`,
  'src/bridge/answer.ts: ^[ \\t]*-?[0-9]+[ \\t]*$': 'the runs hold disjoint characters (blanks, digits), so a text splits one way: linear',
  'src/bridge/answer.ts: -?[0-9]+(?:,[0-9]{3})*(?:\\.[0-9]+)?': 'each repetition of the group starts with a comma and holds exactly three digits, so a text splits one way; it matches at the first digit it meets: linear',
  'src/bridge/logs/satTrainer.ts: ^=== Stage (\\d+)\\/(\\d+) ===$': SEPARATED,
  'src/bridge/logs/satTrainer.ts: ^\\[Stage\\] Updating agent (\\d+) \\((\\d+)\\/(\\d+)\\)$': SEPARATED,
  'src/bridge/logs/satTrainer.ts: ^KL constraint met: (-?(?:\\d+(?:\\.\\d*)?|\\.\\d+)(?:[eE][-+]?\\d+)?|nan|inf|-inf) <= (-?(?:\\d+(?:\\.\\d*)?|\\.\\d+)(?:[eE][-+]?\\d+)?|nan|inf|-inf)$': `${SEPARATED} (a 300,000-digit line: tests/hostile-logs.test.ts)`,
  'src/bridge/logs/satTrainer.ts: ^KL exceeded: (-?(?:\\d+(?:\\.\\d*)?|\\.\\d+)(?:[eE][-+]?\\d+)?|nan|inf|-inf) > (-?(?:\\d+(?:\\.\\d*)?|\\.\\d+)(?:[eE][-+]?\\d+)?|nan|inf|-inf), backtracking\\.\\.\\.$': SEPARATED,
  'src/bridge/logs/satTrainer.ts: ^Stage lower bound: (-?(?:\\d+(?:\\.\\d*)?|\\.\\d+)(?:[eE][-+]?\\d+)?|nan|inf|-inf)\\s+\\(info_gain=(-?(?:\\d+(?:\\.\\d*)?|\\.\\d+)(?:[eE][-+]?\\d+)?|nan|inf|-inf), occ=(-?(?:\\d+(?:\\.\\d*)?|\\.\\d+)(?:[eE][-+]?\\d+)?|nan|inf|-inf), bias=(-?(?:\\d+(?:\\.\\d*)?|\\.\\d+)(?:[eE][-+]?\\d+)?|nan|inf|-inf), sample=(-?(?:\\d+(?:\\.\\d*)?|\\.\\d+)(?:[eE][-+]?\\d+)?|nan|inf|-inf)\\)$': `${SEPARATED} (a 300,000-digit line: tests/hostile-logs.test.ts)`,
  'src/bridge/logs/verl.ts: ^np\\.(?:float|int|uint)\\d*\\((.*)\\)$': 'anchored; \\d* stops at the literal "(", and .* backtracks once over the line to the last ")": linear',
  'src/bridge/logs/verl.ts: ^[-+]?(?:\\d+(?:\\.\\d*)?|\\.\\d+)(?:[eE][-+]?\\d+)?$': `${SEPARATED} (a 300,000-digit value: tests/hostile-logs.test.ts)`,
  'src/bridge/logs/verl.ts: (?:^|\\s)step:(-?\\d+)(?: - (.*))?$': 'a match starts only after a whitespace and "step:", and from each the digits end at the first non-digit: linear in the line',
  'src/bridge/runLog.ts: ^(=== Stage \\d+\\/\\d+ ===|\\[Stage\\] )': `runs on the file's first 64 KiB only; ${SEPARATED}`,
  'src/bridge/runLog.ts: ^\\{"stage": ?\\d+.*"lower_bound"': 'runs on the first line of the first 64 KiB only, anchored: .* backtracks once over it',
  'src/bridge/runLogFile.ts: ^\\s*\\{\\s*"satRunLog"\\s*:': 'runs on the first 64 characters only',
  'src/bridge/runLogSeries.ts: ^val-core\\/(.+)\\/(acc|reward)\\/mean@(\\d+)$': 'anchored, one .+ before literals: it backtracks once over a metric key (a line is at most LOG_LIMITS.lineChars)',
  'src/cli/sat.ts: ^(\\d+)=(.+)$': "runs on the command line's own arguments",
  'src/cli/sat.ts: ^(\\d+)=(best|[A-Za-z]+-([A-Za-z0-9]+))$': "runs on the command line's own arguments",
  'src/model/hfLoad.ts: ^layers\\.(\\d+)\\.(\\w+)$': SEPARATED,
  'src/model/regexSafety.ts: \\{(\\d*)(?:(,)(\\d*))?\\}': 'sticky at one index; the two digit runs lie on either side of a required comma: linear',
  'src/sat/config.ts: ^[-+]?(?:\\d+(?:\\.\\d*)?|\\.\\d+)(?:[eE][-+]?\\d+)?$': SEPARATED,
  'src/model/weights.ts: ^layers\\.(0|[1-9]\\d*)\\.([a-z0-9_]+)$': SEPARATED,
  'src/core/text.ts: "((?:[^"\\\\]|\\\\.){60})(?:[^"\\\\]|\\\\.)+"': 'the alternatives start with different characters (a non-backslash, a backslash), so each text matches one way: linear',
};

describe('the door, by scanning src/', () => {
  const all = FILES.flatMap((f) => patterns(f.ast).map((p) => ({ ...p, file: f.path })));

  it('finds the patterns it scans (a parser change that lost them would pass vacuously)', () => {
    expect(all.length).toBeGreaterThan(100);
    expect(all.some((p) => p.file === 'src/bridge/logs/satTrainer.ts' && p.source.includes('info_gain='))).toBe(true);
  });

  it('no regular expression in src/ can backtrack exponentially; a polynomial one only on capped text', () => {
    const found: string[] = [];
    const seen = new Set<string>();
    for (const p of all) {
      const risk = backtrackingRisk(p.source);
      if (risk === null) continue;
      const key = `${p.file}: ${p.source}`;
      seen.add(key);
      if (key in REVIEWED) continue;
      found.push(`${p.file}:${p.line} /${p.source}/ — ${risk.time}: ${risk.why}`);
    }
    expect(found).toEqual([]);
    expect(Object.keys(REVIEWED).filter((k) => !seen.has(k))).toEqual([]);
  });
});

/** Calls of `name(` and `new name(` in each file of src/ (by the parser: identifiers called, property calls included). */
function callers(name: string): string[] {
  const out = new Set<string>();
  for (const f of FILES) {
    for (const n of walk(f.ast)) {
      if (!ts.isCallExpression(n) && !ts.isNewExpression(n)) continue;
      const e = n.expression;
      const called = ts.isIdentifier(e) ? e.text : ts.isPropertyAccessExpression(e) ? e.name.text : '';
      if (called === name) out.add(f.path);
    }
  }
  return [...out].sort();
}

/** Why a seat's own reading is behind the door. */
const SEAT = "a seat built in its worker (agentApi.ts) or by the CLI, on files the page's checkpoint jobs or the CLI's readers checked";

/**
 * The readers of users' files, and every file of src/ allowed to call each (besides the reader's
 * own module): the door's job table, or code that runs on bytes the door has already checked.
 */
const READERS: Readonly<Record<string, Readonly<Record<string, string>>>> = {
  parseExperimentFile: { 'src/workers/inputJobs.ts': 'the door', 'src/app/autosave.ts': "the page's own autosave (IndexedDB), never a user's file" },
  readOnnxGraph: { 'src/workers/inputJobs.ts': 'the door' },
  readOnnx: { 'src/model/onnx/llama.ts': 'a seat in its worker, on a graph onnxGraph passed', 'src/sat/onnxSeat.ts': 'a seat in its worker, on a graph onnxGraph passed' },
  readRunLog: { 'src/workers/inputJobs.ts': 'the door' },
  readRunLogFile: { 'src/bridge/runLog.ts': 'readRunLog (the door) on a saved run' },
  readRunLogParam: { 'src/workers/inputJobs.ts': 'the door' },
  readRecipe: { 'src/workers/inputJobs.ts': 'the door' },
  readSatTrainer: { 'src/bridge/recipe.ts': 'readRecipe (the door), after checkRecipeYaml' },
  readGenerations: { 'src/workers/inputJobs.ts': 'the door' },
  // A checkpoint or ONNX folder: config.json, the tokenizer and its chat template, the safetensors weights.
  readHfConfig: {
    'src/app/hfFiles.ts': 'a stored checkpoint read back from IndexedDB once its hash matches: the bytes of a folder the door checked',
    'src/app/onnxFiles.ts': "an ONNX folder's config.json after the onnxHead job parsed the same bytes",
    'src/cli/hfSeat.ts': "config.json's bytes as the checkpointFolder job read and parsed them, for the context that job measured",
    'src/workers/inputJobs.ts': 'the door (checkpointConfig, checkpointHead, checkpointFolder)',
    'src/model/onnx/llama.ts': "readOnnxLlamaHead: a seat in its worker, or the CLI's ONNX seat after readOnnxFolder",
    'src/sat/onnxSeat.ts': SEAT,
  },
  parseHfConfig: { 'src/model/hfLoad.ts': 'readHfConfig (above)', 'src/cli/hfSeat.ts': 'the config readHfConfig returned, with the context the checkpointFolder job measured' },
  hfTokenizerOf: {
    'src/workers/inputJobs.ts': 'the door (checkpointHead)',
    'src/model/onnx/llama.ts': 'readOnnxLlamaHead (above)',
    'src/sat/onnxSeat.ts': SEAT,
  },
  HfTokenizer: { 'src/model/hfLoad.ts': 'hfTokenizerOf (above)', 'src/model/onnx/folder.ts': 'readOnnxFolderInfo: a frozen ONNX seat in its worker' },
  ChatTemplate: { 'src/model/hfTokenizer.ts': "the tokenizer's own template (steps, strings and lists capped while it renders)" },
  readJson: {
    'src/model/hfLoad.ts': "readHfConfig's and hfTokenizerOf's files, each against its cap",
    'src/app/onnxFiles.ts': "config.json's vocab_size (to cap tokenizer.json before it is read) and _name_or_path, after the 4 MiB cap; bounded in bytes and depth",
    'src/sat/onnxSeat.ts': SEAT,
  },
  onnxSeatHead: { 'src/workers/inputJobs.ts': 'the door (onnxHead)' },
  declaredVocab: { 'src/app/onnxFiles.ts': "config.json's vocab_size, to cap tokenizer.json before it is read; bounded in bytes and depth", 'src/workers/inputJobs.ts': 'the door (onnxFolder)' },
  readOnnxFolderInfo: { 'src/sat/onnxSeat.ts': SEAT },
  readOnnxLlamaHead: { 'src/cli/onnxSeat.ts': "the CLI's trainable ONNX seat and swap, after readOnnxFolder (the graph through the onnxGraph job; the JSON files as hfTokenizerOf's entry says)" },
  loadOnnxLlama: { 'src/sat/onnxSeat.ts': SEAT },
  loadHfCheckpoint: {
    'src/cli/hfSeat.ts': "after the checkpointFolder job (caps, JSON files, every safetensors header, the tokenizer and template run for the seat's context); each tensor read by range in the CLI's range session (cliRanges), in its worker thread",
    'src/workers/agentApi.ts': SEAT,
  },
  readSafetensors: {
    'src/app/expCodec.ts': "an experiment file's container, inside parseExperimentFile (the door)",
    'src/model/weights.ts': "loadModel: the project's own shipped models, or weights inside an experiment file the door parsed",
  },
  readSafetensorsIndex: {
    'src/model/hfLoad.ts': "readShardHeaders: each header bounded and its entries and offsets checked before a tensor is read, then each tensor read by range as it is converted",
  },
  readShardHeaders: {
    'src/workers/inputJobs.ts': 'the door (checkpointFolder)',
    'src/model/hfLoad.ts': "loadHfCheckpoint: in the CLI on a folder whose headers the checkpointFolder job checked; in the page, in the seat's worker",
  },
  seatOnnxTrainable: { 'src/cli/onnxSeat.ts': 'after readOnnxFolder (the graph through the onnxGraph job)', 'src/workers/agentApi.ts': SEAT },
  seatOnnxFrozen: { 'src/cli/onnxSeat.ts': 'after readOnnxFolder (the graph through the onnxGraph job)', 'src/workers/agentApi.ts': SEAT },
  prepareOnnxSwap: { 'src/cli/onnxSeat.ts': 'a --swap target after readOnnxFolder (the graph through the onnxGraph job)' },
  checkSwapTokenizer: { 'src/cli/onnxSeat.ts': 'a --swap target after readOnnxFolder', 'src/sat/onnxSeat.ts': 'prepareOnnxSwap (above)' },
};

/** Where bytes of a file enter src/ (File / Blob reads, fs reads), each reviewed: a reader beside the door shows up here. */
const BYTES_IN: Readonly<Record<string, string>> = {
  'src/app/components/CheckpointPicker.tsx': "wraps a picked folder's File objects; reads nothing itself",
  'src/app/components/ShareBar.tsx': 'an experiment file, whose bytes go straight to the experimentFile job (boot.ts)',
  'src/app/hfFiles.ts': "a checkpoint's files, each after its size cap, parsed by the checkpoint jobs",
  'src/app/onnxFiles.ts': "an ONNX folder's JSON files (size-capped, parsed by onnxHead) and its graph after onnxGraph passed",
  'src/app/recipeFiles.ts': 'a recipe after its size cap (256 K characters), parsed by the recipe job',
  'src/app/team.ts': "the project's own shipped models (fetched from the site)",
  'src/backend/webgpu/shaders.ts': "the project's own shaders",
  'src/cli/claims.ts': "the CLI's own report",
  'src/cli/models.ts': "the project's own shipped models",
  'src/cli/settingsDoc.ts': "the project's own docs",
  'src/model/safetensors.ts': "readRange: a byte range of a checkpoint shard from the ByteRanges its caller opened (the CLI's range session, read in its worker thread; the bytes already in the worker in the page), each range bounded by the header readSafetensorsIndex checked",
  'src/workers/inputJobs.ts': 'the door',
};

describe('every user file through the door', () => {
  it('each reader is called only by the door or by code behind it', () => {
    const stray: string[] = [];
    for (const [reader, allowed] of Object.entries(READERS)) {
      for (const file of callers(reader)) if (!(file in allowed) && !FILES.find((f) => f.path === file)!.ast.text.includes(`export function ${reader}(`)) stray.push(`${reader} called in ${file}`);
    }
    expect(stray).toEqual([]);
    expect(callers('readRunLog')).toContain('src/workers/inputJobs.ts');
    expect(callers('HfTokenizer')).toContain('src/model/hfLoad.ts'); // new expressions are seen too
    // every reader listed is still called somewhere (a renamed one would pass vacuously)
    expect(Object.keys(READERS).filter((r) => callers(r).length === 0)).toEqual([]);
  });

  it('bytes of a file enter src/ only where reviewed', () => {
    const reads = new Set<string>();
    for (const f of FILES) {
      for (const n of walk(f.ast)) {
        if (!ts.isCallExpression(n)) continue;
        const e = n.expression;
        const blob = ts.isPropertyAccessExpression(e) && n.arguments.length === 0 && ['arrayBuffer', 'text', 'stream'].includes(e.name.text);
        const fs = (ts.isIdentifier(e) ? e.text : ts.isPropertyAccessExpression(e) ? e.name.text : '').match(/^(readFileSync|readFile|readSync|readvSync|createReadStream|openAsBlob|sourceBytes)$/)
          || (ts.isPropertyAccessExpression(e) && /^(read|readv)$/.test(e.name.text)); // a file handle's read (a local function named read is not one)
        if (blob || fs) reads.add(f.path);
      }
      for (const n of walk(f.ast)) if (ts.isNewExpression(n) && n.expression.getText() === 'FileReader') reads.add(f.path);
    }
    const unreviewed = [...reads].filter((p) => !(p in BYTES_IN));
    expect(unreviewed).toEqual([]);
    // The CLI reads only the project's own files in its thread: a checkpoint, an ONNX folder, a log or a dump is read in its worker thread.
    expect([...reads].filter((p) => p.startsWith('src/cli/')).sort()).toEqual(['src/cli/claims.ts', 'src/cli/models.ts', 'src/cli/settingsDoc.ts']);
  });
});

// make bench's ONNX Runtime peer (issue 11: the whole BERT layer, and
// ORT's Softmax and LayerNormalization against fuselab's kernels).  A
// child of bench_peers (bench/ort_peer.c), which times it interleaved
// with the generated program: one ONNX Runtime session (onnxruntime-node,
// CPU execution provider, every graph optimisation on) kept warm between
// rounds, fed the same input values as the program.
//
// usage: node ort_peer.mjs MODULE_DIR MODEL THREADS NAME=FILE ...
//   MODULE_DIR  the onnxruntime-node package (install-deps.sh --bench)
//   MODEL       the .onnx file (parameters as initializers)
//   THREADS     intra-op threads (inter-op: 1, sequential execution)
//   NAME=FILE   an input's values, raw little-endian float32
// The outputs are preallocated and passed to every run.
// It answers one line each: "ready <version>" once the session is made
// (or "error <message>" and exit status 1), then per command on stdin:
//   run         runs the session once: "ok <seconds>" (the time of
//               session.run alone, measured here)
//   dump PATH   writes the first output's floats to PATH: "ok"
//   quit        exits
import { createRequire } from 'node:module';
import { readFileSync, writeFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { resolve } from 'node:path';

function fail(msg) {
  process.stdout.write(`error ${String(msg).replace(/\s+/g, ' ')}\n`);
  process.exit(1);
}

async function open(args) {
  if (args.length < 3)
    fail('usage: ort_peer.mjs MODULE_DIR MODEL THREADS NAME=FILE ...');
  const [dir, model, threadsText, ...feedArgs] = args;
  const threads = Number(threadsText);
  if (!Number.isInteger(threads) || threads < 1)
    fail(`THREADS: expected a whole number of at least 1, got "${threadsText}"`);
  let ort;
  try {
    const abs = resolve(dir);
    ort = createRequire(`${abs}/`)(abs);
  } catch (e) {
    fail(`cannot load onnxruntime-node from ${dir}: ${e.message}`);
  }
  // No spinning: ORT's pool would spin after each run, on the cores the
  // generated program runs on next (interleaved rounds share the cores).
  const session = await ort.InferenceSession.create(model, {
    executionProviders: ['cpu'],
    graphOptimizationLevel: 'all',
    executionMode: 'sequential',
    intraOpNumThreads: threads,
    interOpNumThreads: 1,
    extra: { session: { intra_op: { allow_spinning: '0' } } },
  });
  const meta = new Map(session.inputMetadata.map((m) => [m.name, m]));
  const feeds = {};
  for (const arg of feedArgs) {
    const at = arg.indexOf('=');
    const name = arg.slice(0, at), file = arg.slice(at + 1);
    const m = meta.get(name);
    if (at <= 0 || !m)
      fail(`${arg}: not NAME=FILE for an input of the model`);
    const bytes = readFileSync(file);
    const data = new Float32Array(bytes.buffer, bytes.byteOffset,
                                  bytes.length / 4);
    const want = m.shape.reduce((a, d) => a * d, 1);
    if (data.length !== want)
      fail(`${name}: ${data.length} floats in ${file}, the input takes ${want}`);
    feeds[name] = new ort.Tensor('float32', data, m.shape);
  }
  for (const name of session.inputNames)
    if (!feeds[name])
      fail(`input ${name} has no NAME=FILE`);
  // The outputs are allocated once, as the generated program's buffers
  // are: a fresh 16 MiB output per run would time the allocation.
  const fetches = {};
  for (const m of session.outputMetadata) {
    const n = m.shape.reduce((a, d) => a * d, 1);
    fetches[m.name] = new ort.Tensor('float32', new Float32Array(n), m.shape);
  }
  return { ort, session, feeds, fetches };
}

async function serve({ ort, session, feeds, fetches }) {
  process.stdout.write(`ready ${ort.env.versions.common ?? 'unknown'}\n`);
  const lines = createInterface({ input: process.stdin });
  for await (const line of lines) {
    const [cmd, ...rest] = line.trim().split(' ');
    if (cmd === 'run') {
      const t0 = process.hrtime.bigint();
      await session.run(feeds, fetches);
      const dt = Number(process.hrtime.bigint() - t0) / 1e9;
      process.stdout.write(`ok ${dt}\n`);
    } else if (cmd === 'dump') {
      await session.run(feeds, fetches);
      const first = fetches[session.outputNames[0]].data;
      writeFileSync(rest.join(' '), Buffer.from(first.buffer, first.byteOffset,
                                                first.byteLength));
      process.stdout.write('ok\n');
    } else if (cmd === 'quit') {
      break;
    } else {
      process.stdout.write(`error unknown command "${cmd}"\n`);
    }
  }
  process.exit(0);
}

open(process.argv.slice(2)).then(serve, (e) => fail(e.message));

// The strongest plain CPU skinning path a three.js user has: one typed-array loop over frames and vertices
// (what SkinnedMesh.applyBoneTransform does per vertex, without its Vector3/Matrix4 objects), run by Node.
//
//   node skin_loop.mjs DIR ROUNDS [LOOP]  -> {"seconds": [..], "cpu_seconds": [..], "loop": name, "checksum": x, "sample": [..]}
//
// seconds: wall time of each round (process.hrtime); cpu_seconds: the process's CPU time over it (process.cpuUsage,
// user + system), which leaves out the time a loaded machine's scheduler gives other processes.
//
// DIR holds little-endian raw arrays written by benchmarks/bench_skin.py: rest.f32 (V*3), joints.u16 (V*K),
// weights.f32 (V*K), S.f32 (F*J*12: each joint matrix's first three rows, row-major) and shape.json {V, K, F, J}.
// Each round skins every frame into one reused Float32Array (F*V*3), as mesh.positions(W, out=buf) does.
import { readFileSync } from 'node:fs';

const [dir, roundsArg, loopArg] = process.argv.slice(2);
const shape = JSON.parse(readFileSync(`${dir}/shape.json`, 'utf8'));
const { V, K, F, J } = shape;
const f32 = (name) => { const b = readFileSync(`${dir}/${name}`); return new Float32Array(b.buffer, b.byteOffset, b.byteLength / 4); };
const rest = f32('rest.f32');
const weights = f32('weights.f32');
const S = f32('S.f32');
const jb = readFileSync(`${dir}/joints.u16`);
const joints = new Uint16Array(jb.buffer, jb.byteOffset, jb.byteLength / 2);
const out = new Float32Array(F * V * 3);

// Any number of influences per vertex, zero weights skipped (three.js's applyBoneTransform skips them too).
function skinAny() {
  for (let f = 0; f < F; f++) {
    const sf = f * J * 12;
    const of = f * V * 3;
    for (let v = 0; v < V; v++) {
      const x = rest[3 * v], y = rest[3 * v + 1], z = rest[3 * v + 2];
      let a0 = 0, a1 = 0, a2 = 0;
      for (let k = 0; k < K; k++) {
        const w = weights[v * K + k];
        if (w === 0) continue;
        const m = sf + joints[v * K + k] * 12;
        a0 += w * (S[m] * x + S[m + 1] * y + S[m + 2] * z + S[m + 3]);
        a1 += w * (S[m + 4] * x + S[m + 5] * y + S[m + 6] * z + S[m + 7]);
        a2 += w * (S[m + 8] * x + S[m + 9] * y + S[m + 10] * z + S[m + 11]);
      }
      out[of + 3 * v] = a0; out[of + 3 * v + 1] = a1; out[of + 3 * v + 2] = a2;
    }
  }
}

// Four influences per vertex (three.js's skinIndex / skinWeight layout) unrolled, no branch: the form V8 runs
// fastest on meshes with four influences (about 1.2x the loop above here), used where K = 4 and it is faster.
function skin4() {
  for (let f = 0; f < F; f++) {
    const sf = f * J * 12;
    let o = f * V * 3;
    for (let v = 0, i4 = 0, i3 = 0; v < V; v++, i4 += 4, i3 += 3) {
      const x = rest[i3], y = rest[i3 + 1], z = rest[i3 + 2];
      const w0 = weights[i4], w1 = weights[i4 + 1], w2 = weights[i4 + 2], w3 = weights[i4 + 3];
      const m0 = sf + joints[i4] * 12, m1 = sf + joints[i4 + 1] * 12;
      const m2 = sf + joints[i4 + 2] * 12, m3 = sf + joints[i4 + 3] * 12;
      for (let r = 0; r < 12; r += 4) {
        out[o++] = w0 * (S[m0 + r] * x + S[m0 + r + 1] * y + S[m0 + r + 2] * z + S[m0 + r + 3])
          + w1 * (S[m1 + r] * x + S[m1 + r + 1] * y + S[m1 + r + 2] * z + S[m1 + r + 3])
          + w2 * (S[m2 + r] * x + S[m2 + r + 1] * y + S[m2 + r + 2] * z + S[m2 + r + 3])
          + w3 * (S[m3 + r] * x + S[m3 + r + 1] * y + S[m3 + r + 2] * z + S[m3 + r + 3]);
      }
    }
  }
}

// Both forms warmed up (two untimed passes each: V8's tiers), then each timed three times; the faster (by its best
// CPU time) is the one timed below. LOOP (a name printed by an earlier run) skips the choice: the same loop every round.
const loops = K === 4 ? { any: skinAny, unrolled4: skin4 } : { any: skinAny };
let chosen = loopArg ?? 'any';
if (loopArg === undefined) {
  let best = Infinity;
  for (const [name, fn] of Object.entries(loops)) {
    fn(); fn();
    for (let r = 0; r < 3; r++) {
      const c0 = process.cpuUsage();
      fn();
      const c = process.cpuUsage(c0);
      const t = c.user + c.system;
      if (t < best) { best = t; chosen = name; }
    }
  }
}
const skin = loops[chosen];
if (loopArg !== undefined) { skin(); skin(); }
const seconds = [];
const cpuSeconds = [];
for (let r = 0; r < Number(roundsArg); r++) {
  const c0 = process.cpuUsage();
  const t0 = process.hrtime.bigint();
  skin();
  seconds.push(Number(process.hrtime.bigint() - t0) / 1e9);
  const c = process.cpuUsage(c0);
  cpuSeconds.push((c.user + c.system) / 1e6);
}
let checksum = 0;
for (let i = 0; i < out.length; i += 997) checksum += out[i];
process.stdout.write(JSON.stringify({ seconds, cpu_seconds: cpuSeconds, loop: chosen, checksum, sample: Array.from(out.subarray(0, 6)) }));

// three.js SkeletonUtils.retargetClip on a BVH clip onto a target skeleton, timed (run by bench_motion.py).
//
//   node tests/node/threejs_retarget.mjs SOURCE.bvh TARGET.json ROUNDS [OPTIONS.json]
//
// OPTIONS.json: more retargetClip options (e.g. {"preserveBoneMatrix": false}); "digest" in the output sums every
// value the clip holds, so two option sets can be shown to write the same clip.
// TARGET.json: {"bones": [{"name", "parent", "position", "quaternion"}...], "names": {target: source}, "hip": name}
// (the target's rest skeleton, parents first). Prints JSON: seconds per round and the frames written.
import { readFileSync } from 'node:fs';
import * as THREE from 'three';
import { BVHLoader } from 'three/examples/jsm/loaders/BVHLoader.js';
import { retargetClip } from 'three/examples/jsm/utils/SkeletonUtils.js';

const [bvhPath, targetPath, roundsText, extraText] = process.argv.slice(2);
const extra = extraText ? JSON.parse(extraText) : {};
const source = new BVHLoader().parse(readFileSync(bvhPath, 'utf8'));
const spec = JSON.parse(readFileSync(targetPath, 'utf8'));
const bones = spec.bones.map((b) => {
  const bone = new THREE.Bone();
  bone.name = b.name;
  bone.position.fromArray(b.position);
  bone.quaternion.fromArray(b.quaternion);  // (x, y, z, w)
  return bone;
});
spec.bones.forEach((b, i) => { if (b.parent >= 0) bones[b.parent].add(bones[i]); });
const mesh = new THREE.SkinnedMesh(new THREE.BufferGeometry(), new THREE.MeshBasicMaterial());
mesh.add(bones[0]);
mesh.bind(new THREE.Skeleton(bones));
const seconds = [];
let frames = 0;
let digest = 0;
for (let r = 0; r < Number(roundsText); r++) {
  const t0 = process.hrtime.bigint();
  const clip = retargetClip(mesh, source.skeleton, source.clip, { hip: spec.hip, names: spec.names, ...extra });
  seconds.push(Number(process.hrtime.bigint() - t0) / 1e9);
  frames = Math.max(...clip.tracks.map((t) => t.times.length));
  digest = clip.tracks.reduce((a, t) => a + t.values.reduce((b, v, i) => b + v * (1 + (i % 7)), 0), 0);
}
console.log(JSON.stringify({ seconds, frames, digest, source_frames: source.clip.tracks[0].times.length }));

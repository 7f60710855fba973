// three.js's FBXLoader as an independent oracle for animkit's FBX reader (run by tests/test_fbx_threejs.py).
//
//   node threejs_fbx_oracle.mjs world FILE.fbx TIMES_JSON  -> per clip: every named object's world position
//   node threejs_fbx_oracle.mjs skin  FILE.fbx TIMES_JSON  -> per clip: every skinned mesh's world vertices
//   node threejs_fbx_oracle.mjs meshes FILE.fbx TIMES_JSON -> per clip: every mesh's world vertices and origin
//   node threejs_fbx_oracle.mjs bench FILE.fbx TIMES_JSON  -> seconds: parse + every time sampled + CPU skinning
//
// Coordinates are the file's own (FBXLoader applies neither UnitScaleFactor nor the axis system; the test maps
// them). Sampling: FBXLoader's own clips through an AnimationMixer, LoopOnce, at the exact times given. Textures
// are not decoded (three's TextureLoader needs the DOM): TextureLoader.load is stubbed to an empty texture and
// window.URL.createObjectURL (embedded images) to a stand-in name.
import { readFileSync } from 'node:fs';

import * as THREE from 'three';
import { FBXLoader } from 'three/examples/jsm/loaders/FBXLoader.js';

THREE.TextureLoader.prototype.load = function () { return new THREE.Texture(); };
// embedded images become blob URLs through the DOM's window.URL: a stand-in name is enough for the stub above
globalThis.window ??= { URL: { createObjectURL: () => 'blob:embedded' } };
const quiet = console.warn;
console.warn = () => {};

const [mode, file, timesJson] = process.argv.slice(2);
const times = JSON.parse(timesJson);
const t0 = process.hrtime.bigint();
const buf = readFileSync(file);
const root = new FBXLoader().parse(buf.buffer.slice(buf.byteOffset, buf.byteOffset + buf.byteLength), '');
console.warn = quiet;

const skinned = [];
const meshes = [];
root.traverse((o) => { if (o.isSkinnedMesh) skinned.push(o); if (o.isMesh) meshes.push(o); });

function skinnedPositions(mesh) {
  const n = mesh.geometry.attributes.position.count;
  const out = new Array(n * 3);
  const v = new THREE.Vector3();
  mesh.skeleton.update();
  for (let i = 0; i < n; i++) {
    mesh.getVertexPosition(i, v);
    v.applyMatrix4(mesh.matrixWorld);
    out[3 * i] = v.x; out[3 * i + 1] = v.y; out[3 * i + 2] = v.z;
  }
  return out;
}

const result = { unitScaleFactor: root.userData.unitScaleFactor ?? null, clips: {} };
const clips = root.animations.length ? root.animations : [new THREE.AnimationClip('rest', 0, [])];
for (const clip of clips) {
  const mixer = new THREE.AnimationMixer(root);
  const action = mixer.clipAction(clip);
  action.setLoop(THREE.LoopOnce, 1);
  action.clampWhenFinished = true;
  action.play();
  const frames = [];
  let vertices = 0;
  for (const t of times) {
    mixer.setTime(t);
    root.updateMatrixWorld(true);
    if (mode === 'world') {
      const m = {};
      root.traverse((o) => {
        if (o !== root && o.name && !(o.name in m)) m[o.name] = new THREE.Vector3().setFromMatrixPosition(o.matrixWorld).toArray();
      });
      frames.push(m);
    } else if (mode === 'skin') {
      frames.push(skinned.map((mesh) => ({ name: mesh.name, positions: skinnedPositions(mesh) })));
    } else if (mode === 'meshes') {
      frames.push(meshes.map((mesh) => ({
        name: mesh.name, origin: new THREE.Vector3().setFromMatrixPosition(mesh.matrixWorld).toArray(),
        positions: mesh.isSkinnedMesh ? skinnedPositions(mesh) : (() => {
          const a = mesh.geometry.attributes.position, v = new THREE.Vector3(), out = [];
          for (let i = 0; i < a.count; i++) { v.fromBufferAttribute(a, i).applyMatrix4(mesh.matrixWorld); out.push(v.x, v.y, v.z); }
          return out;
        })(),
      })));
    } else {
      for (const mesh of skinned) { skinnedPositions(mesh); vertices += mesh.geometry.attributes.position.count; }
    }
  }
  result.clips[clip.name] = mode === 'bench' ? { vertex_frames: vertices } : frames;
}
if (mode === 'bench') result.seconds = Number(process.hrtime.bigint() - t0) / 1e9;
process.stdout.write(JSON.stringify(result));

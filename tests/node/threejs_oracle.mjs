// three.js as an independent oracle for animkit's glTF reader (run by tests/test_gltf_threejs.py).
//
//   node threejs_oracle.mjs world FILE.gltf TIMES_JSON   -> every node's world matrix at each time, per animation
//   node threejs_oracle.mjs skin  FILE.gltf TIMES_JSON   -> every skinned mesh's world vertex positions
//   node threejs_oracle.mjs bench FILE.gltf TIMES_JSON   -> seconds for CPU skinning (getVertexPosition loop)
//
// FILE is a .gltf whose buffers are data: URIs and which has no images (three.js decodes images through the
// DOM). Sampling: GLTFLoader's own clips (its KeyframeTracks and interpolants, GLTFCubicSplineInterpolant
// included) through an AnimationMixer, LoopOnce, at the exact times given.
import { readFileSync } from 'node:fs';

// three's FileLoader (fetching the data: URIs) reports progress with the DOM's ProgressEvent
globalThis.ProgressEvent ??= class ProgressEvent { constructor(type, init) { Object.assign(this, init, { type }); } };
import * as THREE from 'three';
import { GLTFLoader } from 'three/examples/jsm/loaders/GLTFLoader.js';

const [mode, file, timesJson] = process.argv.slice(2);
const text = readFileSync(file, 'utf8');
const times = JSON.parse(timesJson);

const gltf = await new Promise((resolve, reject) => new GLTFLoader().parse(text, '', resolve, reject));
const scene = gltf.scene;
const assoc = gltf.parser.associations;
const nodeIndex = new Map();
scene.traverse((o) => {
  const a = assoc.get(o);
  if (a && a.nodes !== undefined && !nodeIndex.has(a.nodes)) nodeIndex.set(a.nodes, o);
});
const skinned = [];
scene.traverse((o) => { if (o.isSkinnedMesh) skinned.push(o); });

function atTime(mixer, t) {
  mixer.setTime(t);
  scene.updateMatrixWorld(true);
}

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

const result = {};
const clips = gltf.animations.length ? gltf.animations : [new THREE.AnimationClip('rest', 0, [])];
for (const clip of clips) {
  const mixer = new THREE.AnimationMixer(scene);
  const action = mixer.clipAction(clip);
  action.setLoop(THREE.LoopOnce, 1);
  action.clampWhenFinished = true;
  action.play();
  const frames = [];
  if (mode === 'bench') {
    const start = process.hrtime.bigint();
    let vertices = 0;
    for (const t of times) {
      atTime(mixer, t);
      for (const m of skinned) { skinnedPositions(m); vertices += m.geometry.attributes.position.count; }
    }
    const seconds = Number(process.hrtime.bigint() - start) / 1e9;
    result[clip.name] = { seconds, vertex_frames: vertices };
    continue;
  }
  for (const t of times) {
    atTime(mixer, t);
    if (mode === 'world') {
      const m = {};
      for (const [i, o] of nodeIndex) m[i] = o.matrixWorld.elements.slice();  // column-major
      frames.push(m);
    } else {
      frames.push(skinned.map((mesh) => ({ node: assoc.get(mesh)?.nodes ?? null, name: mesh.name,
                                           positions: skinnedPositions(mesh) })));
    }
  }
  result[clip.name] = frames;
}
process.stdout.write(JSON.stringify(result));

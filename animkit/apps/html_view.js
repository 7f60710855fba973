// animkit's interactive viewer: the module script of a page written by animkit/apps/html_view.py.
// The page holds everything: this script, three.js (gzipped, base64), one GLB per figure (gzipped, base64) and a
// JSON description (camera, panels, overlays). three.js is imported through a blob URL (file:// pages may not
// import modules), so nothing is fetched from the network.
//
// window.animkit (for people and tests): ready (true once drawn), error (a message or null), panels, duration,
// fps, setTime(t), time(), play(), pause(), setSpeed(s), setOptions({grid, trails, targets, link}),
// jointPositions(panel) (world positions of the figure's nodes, animkit's frame, node order), camera(panel).

const META = JSON.parse(document.getElementById("animkit-meta").textContent);
const api = { ready: false, error: null, panels: META.panels.length, duration: META.duration, fps: META.fps };
window.animkit = api;

function fail(err) {
  api.error = String(err && err.stack ? err.stack : err);
  document.documentElement.dataset.animkit = "error";
  const box = document.getElementById("animkit-error");
  box.textContent = "animkit viewer: " + (err && err.message ? err.message : err);
  box.style.display = "block";
}

function bytesOf(id) {
  const text = document.getElementById(id).textContent.replace(/\s+/g, "");
  const bin = atob(text);
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}

async function gunzip(bytes) {
  const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
  return new Response(stream).arrayBuffer();
}

function srgb(T, c) {
  return new T.Color().setRGB(c[0], c[1], c[2], T.SRGBColorSpace);
}

function parse(T, loader, buffer) {
  return new Promise((resolve, reject) => loader.parse(buffer, "", resolve, reject));
}

async function makePanel(T, loader, buffer, p, host) {
  const [W, H] = META.size;
  const cell = document.createElement("div");
  cell.className = "animkit-cell";
  if (p.label) {
    const label = document.createElement("div");
    label.className = "animkit-label";
    label.textContent = p.label;
    cell.appendChild(label);
  }
  const canvas = document.createElement("canvas");
  canvas.className = "animkit-canvas";
  cell.appendChild(canvas);
  host.appendChild(cell);
  const renderer = new T.WebGLRenderer({ canvas, antialias: true, preserveDrawingBuffer: true });
  renderer.setPixelRatio(window.devicePixelRatio || 1);
  renderer.setSize(W, H);
  const scene = new T.Scene();
  scene.background = srgb(T, META.background);

  const cam = META.camera;
  const camera = new T.PerspectiveCamera(cam.fov, W / H, cam.near, cam.far);
  camera.up.set(...cam.up);
  camera.position.set(...cam.eye);
  scene.add(camera);
  // lights as the software renderer's: an ambient part and a light from the viewer's side
  scene.add(new T.AmbientLight(0xffffff, META.light.ambient));
  const head = new T.DirectionalLight(0xffffff, META.light.direct);
  head.position.set(...META.light.dir);
  head.target.position.set(0, 0, 0);
  camera.add(head);
  camera.add(head.target);

  const gltf = await parse(T, loader, buffer);
  const root = gltf.scene;
  const nodes = new Array(p.nodes).fill(null);
  root.traverse((o) => {
    const a = gltf.parser.associations.get(o);
    if (a && a.nodes !== undefined && a.nodes < p.nodes && nodes[a.nodes] === null) nodes[a.nodes] = o;
    if (a && a.nodes === p.wrapper) {  // the Z-up wrapper: the page keeps animkit's own frame (camera.up)
      o.position.set(0, 0, 0);
      o.quaternion.identity();
      o.scale.set(1, 1, 1);
    }
    if (o.isMesh) {
      o.frustumCulled = false;  // skinned: the bind pose's bounds say nothing about where the figure went
      if (o.material && o.material.vertexColors) {
        o.material = new T.MeshLambertMaterial({ vertexColors: true, side: T.DoubleSide });
      }
    }
  });
  if (nodes.some((n) => n === null)) throw new Error("a figure node is missing from the glTF scene");
  scene.add(root);
  const mixer = new T.AnimationMixer(root);
  const clip = gltf.animations[p.animation];
  const action = mixer.clipAction(clip);
  action.play();

  // overlays: the ground grid, target markers, the effector's trail (drawn over the figure, as in the GIFs)
  const grid = new T.LineSegments(new T.BufferGeometry(),
    new T.LineBasicMaterial({ color: srgb(T, META.colors.grid) }));
  grid.geometry.setAttribute("position", new T.Float32BufferAttribute(p.grid, 3));
  scene.add(grid);
  const targets = [];
  for (let k = 0; k < p.targets.count; k++) {
    const m = new T.Mesh(new T.SphereGeometry(META.marker, 20, 12),
      new T.MeshBasicMaterial({ color: srgb(T, META.colors.target), depthTest: false }));
    m.renderOrder = 3;
    scene.add(m);
    targets.push(m);
  }
  let trail = null;
  if (p.trail.length >= 6) {
    trail = new T.Line(new T.BufferGeometry(),
      new T.LineBasicMaterial({ color: srgb(T, META.colors.trail), depthTest: false }));
    trail.geometry.setAttribute("position", new T.Float32BufferAttribute(p.trail, 3));
    trail.renderOrder = 2;
    scene.add(trail);
  }

  const controls = new T.OrbitControls(camera, canvas);
  controls.target.set(...cam.target);
  controls.update();

  function pose(t) {
    const tp = Math.min(Math.max(t, 0), p.duration);
    action.time = Math.min(tp, clip.duration);
    mixer.update(0);
    const f = Math.min(p.frames - 1, Math.round(tp * p.fps));
    const tg = p.targets;
    for (let k = 0; k < targets.length; k++) {
      const o = 3 * (tg.perFrame ? f * tg.count + k : k);
      targets[k].position.set(tg.points[o], tg.points[o + 1], tg.points[o + 2]);
    }
    if (trail) trail.geometry.setDrawRange(0, f + 1);
  }
  return { p, renderer, scene, camera, controls, nodes, grid, targets, trail, pose, canvas,
           draw() { renderer.render(scene, camera); } };
}

async function main() {
  const three = await gunzip(bytesOf("animkit-three"));
  const url = URL.createObjectURL(new Blob([three], { type: "text/javascript" }));
  const T = await import(url);
  URL.revokeObjectURL(url);
  const buffers = await Promise.all(META.glbs.map((id) => gunzip(bytesOf(id))));
  const loader = new T.GLTFLoader();
  const host = document.getElementById("animkit-panels");
  host.style.gridTemplateColumns = `repeat(${META.columns}, auto)`;
  const panels = [];
  for (const p of META.panels) panels.push(await makePanel(T, loader, buffers[p.glb], p, host));

  const ui = {
    play: document.getElementById("animkit-play"), slider: document.getElementById("animkit-time"),
    label: document.getElementById("animkit-clock"), speed: document.getElementById("animkit-speed"),
    link: document.getElementById("animkit-link"), grid: document.getElementById("animkit-grid"),
    trails: document.getElementById("animkit-trails"),
  };
  let t = 0, playing = META.autoplay, speed = 1, dirty = true, last = null, syncing = false;
  ui.slider.max = String(META.duration);
  ui.slider.step = String(1 / META.fps);
  if (panels.length < 2) ui.link.parentElement.style.display = "none";

  function show() {
    for (const q of panels) q.pose(t);
    ui.slider.value = String(t);
    ui.label.textContent = `${t.toFixed(2)} / ${META.duration.toFixed(2)} s`;
    ui.play.textContent = playing ? "pause" : "play";
    dirty = true;
  }
  function draw() {
    for (const q of panels) q.draw();
    dirty = false;
  }
  function setOptions(o) {
    if (o.grid !== undefined) { ui.grid.checked = !!o.grid; for (const q of panels) q.grid.visible = !!o.grid; }
    if (o.trails !== undefined) {
      ui.trails.checked = !!o.trails;
      for (const q of panels) if (q.trail) q.trail.visible = !!o.trails;
    }
    if (o.targets !== undefined) for (const q of panels) for (const m of q.targets) m.visible = !!o.targets;
    if (o.link !== undefined) { ui.link.checked = !!o.link; if (o.link) follow(panels[0]); }
    dirty = true;
  }
  function follow(lead) {  // linked cameras: every panel looks as `lead` does
    if (syncing) return;
    syncing = true;
    for (const q of panels) {
      if (q === lead) continue;
      q.camera.position.copy(lead.camera.position);
      q.camera.up.copy(lead.camera.up);
      q.controls.target.copy(lead.controls.target);
      q.controls.update();
    }
    syncing = false;
  }
  for (const q of panels) {
    q.controls.addEventListener("change", () => { if (ui.link.checked) follow(q); dirty = true; });
  }
  ui.play.onclick = () => { playing = !playing; if (playing && t >= META.duration) t = 0; show(); };
  ui.slider.oninput = () => { playing = false; t = +ui.slider.value; show(); };
  ui.speed.onchange = () => { speed = +ui.speed.value; };
  ui.link.onchange = () => setOptions({ link: ui.link.checked });
  ui.grid.onchange = () => setOptions({ grid: ui.grid.checked });
  ui.trails.onchange = () => setOptions({ trails: ui.trails.checked, targets: ui.trails.checked });
  document.addEventListener("keydown", (e) => {
    if (e.code === "Space" && e.target === document.body) { e.preventDefault(); ui.play.onclick(); }
  });

  function frame(now) {
    if (playing && last !== null && META.duration > 0) {
      t += speed * (now - last) / 1000;
      if (t > META.duration) t = META.loop ? t % META.duration : META.duration;
      if (!META.loop && t >= META.duration) playing = false;
      show();
    }
    last = now;
    if (dirty) draw();
    requestAnimationFrame(frame);
  }

  Object.assign(api, {
    setTime(s) { playing = false; t = Math.min(Math.max(+s, 0), META.duration); show(); draw(); },
    time: () => t,
    play() { playing = true; show(); },
    pause() { playing = false; show(); },
    setSpeed(s) { speed = +s; ui.speed.value = String(s); },
    setOptions(o) { setOptions(o); draw(); },
    jointPositions(i = 0) {
      const q = panels[i];
      q.scene.updateMatrixWorld(true);
      const v = new T.Vector3();
      return q.nodes.map((n) => n.getWorldPosition(v).toArray());
    },
    camera(i = 0) {
      const q = panels[i];
      return { eye: q.camera.position.toArray(), target: q.controls.target.toArray(), up: q.camera.up.toArray(),
               fov: q.camera.fov, near: q.camera.near, far: q.camera.far, width: META.size[0],
               height: META.size[1] };
    },
  });
  setOptions({ grid: META.grid });
  show();
  draw();
  api.ready = true;
  document.documentElement.dataset.animkit = "ready";  // for a watcher that may not evaluate script in the page
  requestAnimationFrame(frame);
}

main().catch(fail);

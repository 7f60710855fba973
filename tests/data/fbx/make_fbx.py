"""Make the FBX test files in this folder (the recipe; see tests/data/SOURCES.md). Three steps:

1. ``python tests/data/fbx/make_fbx.py source /tmp/fbx_src.glb`` (animkit's environment): animkit's ``humanoid``
   example with its ``walk`` and ``wave`` clips and a skinned box mesh (a box per bone, two to five influences per
   vertex, a checker texture), nodes renamed to Mixamo's ``mixamorig:`` names, written as glTF by animkit.
2. ``python make_fbx.py blender /tmp/fbx_src.glb tests/data/fbx`` with Blender as a module (``pip install
   bpy==4.2.0`` in its own virtual environment; CPython 3.11): Blender imports the glTF and writes it with its FBX
   exporter (binary), twice:

   * ``mixamo_yup_cm.fbx``: FBX 7.4, Y-up (-Z forward), centimetres (``UnitScaleFactor`` 100: Blender's metres
     times 100), texture embedded, both actions as animation stacks;
   * ``mixamo_zup_77.fbx``: FBX 7.7 (Blender's encoder writes 7.5+'s 64-bit records when its version constant says
     7700), Z-up (+Y forward), metres, the texture next to the file (``checker.png``).

3. ``python tests/data/fbx/make_fbx.py ascii /tmp/fbx_src.glb tests/data/fbx`` (needs the ``assimp`` command,
   Debian's ``assimp-utils`` 5.2.5): Assimp exports the glTF as ASCII FBX (it writes version 7.5, InheritType 1
   on its bones, the texture embedded; its key times, 1000 times too large, are divided and its 24 fps set to the
   clips' 30), then this adds FBX transform features to three bones by editing their
   ``Properties70``: ``prerot_ascii.fbx`` has pre- and post-rotations and rotation orders ZXY and YZX on
   animated bones, and a rotation pivot and offset, a scaling pivot, a pre-rotation and a scale on a still one,
   and a third animation stack, ``empty``, whose one layer has no curves.

4. ``python tests/data/fbx/make_fbx.py real tests/data/fbx`` (Debian's ``assimp-testmodels``): the real files by
   other tools and ``maya_prepost.fbx`` (see :func:`real`).
   Then, with Blender: ``python make_fbx.py blender-reference tests/data/fbx/huesitos.fbx
   tests/data/fbx/huesitos_blender.json`` (Blender's importer's skinned vertices: the oracle for that file).
5. ``python tests/data/fbx/fbx_to_ascii.py tests/data/fbx/mixamo_yup_cm.fbx tests/data/fbx/mixamo_yup_cm_ascii74.fbx
   7400`` and the same from ``mixamo_zup_77.fbx`` to ``mixamo_zup_ascii77.fbx`` with 7700: ASCII 7.4 and 7.7 copies
   of the two binaries (fbx_to_ascii.py, this folder's binary → ASCII converter).
6. ``python tests/data/fbx/make_fbx.py hand-61 tests/data/fbx/swing_61_ascii.fbx``: an FBX 6.1 ASCII file written
   by hand (see :func:`hand_61`).

The tests never import bpy: they read the files this wrote.
"""

from __future__ import annotations

import sys
from pathlib import Path

MIXAMO = {
    "hips": "Hips", "spine": "Spine", "chest": "Spine1", "neck": "Neck", "head": "Head",
    "clavicle_r": "RightShoulder", "shoulder_r": "RightArm", "elbow_r": "RightForeArm", "wrist_r": "RightHand",
    "hand_r": "RightHandIndex1", "clavicle_l": "LeftShoulder", "shoulder_l": "LeftArm", "elbow_l": "LeftForeArm",
    "wrist_l": "LeftHand", "hand_l": "LeftHandIndex1", "hip_r": "RightUpLeg", "knee_r": "RightLeg",
    "ankle_r": "RightFoot", "toe_r": "RightToeBase", "hip_l": "LeftUpLeg", "knee_l": "LeftLeg",
    "ankle_l": "LeftFoot", "toe_l": "LeftToeBase",
}


def checker(size: int = 8):  # type: ignore[no-untyped-def]
    import numpy as np

    k = (np.add.outer(np.arange(size), np.arange(size)) % 2).astype(bool)
    img = np.zeros((size, size, 4), dtype=np.uint8)
    img[k] = (230, 120, 40, 255)
    img[~k] = (40, 90, 200, 255)
    return img


def source(out: str) -> None:
    """Step 1: the humanoid, its two clips and a skinned box mesh, as a glTF file written by animkit."""
    import json
    import struct

    import numpy as np

    import animkit
    from animkit.examples import load
    from animkit.look.mesh import Mesh, Skin
    from animkit.scene import Scene

    walk, wave = load("walk"), load("wave")
    fig = walk.figure
    names = fig.node_names
    W = fig.world_batch(fig.rest_pose()[None])[0]
    index = {n: i for i, n in enumerate(names)}
    positions, faces, joints, weights, uvs = [], [], [], [], []
    for arc in fig.arcs():
        if arc.parent is None:
            continue
        p, c = arc.parent.name, arc.child.name
        a, b = W[index[p], :3, 3], W[index[c], :3, 3]
        axis = b - a
        length = float(np.linalg.norm(axis))
        if length < 1e-6:
            continue
        d = axis / length
        u = np.cross(d, [0.0, 0.0, 1.0] if abs(d[2]) < 0.9 else [1.0, 0.0, 0.0])
        u /= np.linalg.norm(u)
        v = np.cross(d, u)
        r = min(0.05, 0.25 * length)
        base = len(positions)
        grandparent = fig.parent_of(p)
        for ring, f in enumerate((0.0, 0.5, 1.0)):
            for k, (su, sv) in enumerate(((1, 1), (-1, 1), (-1, -1), (1, -1))):
                positions.append(a + f * axis + r * (su * u + sv * v))
                uvs.append((k / 3.0, f))
                if ring == 0 and grandparent is not None and grandparent != "world":
                    inf = [(p, 0.7), (grandparent, 0.3)]
                elif ring == 2:
                    inf = [(p, 0.6), (c, 0.4)]
                else:
                    inf = [(p, 1.0)]
                if p == "hips" and ring == 0:  # five influences on the pelvis
                    inf = [("hips", 0.4), ("spine", 0.15), ("hip_l", 0.15), ("hip_r", 0.15), ("chest", 0.15)]
                js = [index[n] for n, _ in inf] + [0] * (8 - len(inf))
                ws = [w for _, w in inf] + [0.0] * (8 - len(inf))
                joints.append(js)
                weights.append(ws)
        for r0, r1 in ((0, 1), (1, 2)):
            for k in range(4):
                a0, a1 = base + 4 * r0 + k, base + 4 * r0 + (k + 1) % 4
                b0, b1 = base + 4 * r1 + k, base + 4 * r1 + (k + 1) % 4
                faces += [(a0, a1, b1), (a0, b1, b0)]
        faces += [(base, base + 2, base + 1), (base, base + 3, base + 2),
                  (base + 8, base + 9, base + 10), (base + 8, base + 10, base + 11)]
    P = np.array(positions)
    F = np.array(faces, dtype=np.intp)
    skin = Skin("body", tuple(names), np.linalg.inv(W), np.arange(len(names), dtype=np.intp))
    mesh = Mesh("body", names[0], 0, F, P, animkit.look.mesh.vertex_normals(P, F), np.array(uvs), np.ones(4),
                checker(), skin, np.array(joints, dtype=np.intp), np.array(weights))
    scene = Scene(fig, clips={"walk": walk.clip(), "wave": wave.clip()}, meshes=(mesh,), up="y")
    tmp = Path(out).with_suffix(".tmp.glb")
    animkit.save(tmp, scene)
    data = tmp.read_bytes()
    tmp.unlink()
    (jlen,) = struct.unpack_from("<I", data, 12)
    doc = json.loads(data[20:20 + jlen])
    for node in doc["nodes"]:
        if node.get("name") in MIXAMO:
            node["name"] = "mixamorig:" + MIXAMO[node["name"]]
    text = json.dumps(doc, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 4)
    rest = data[20 + jlen:]
    body = struct.pack("<II", len(text), 0x4E4F534A) + text + rest
    Path(out).write_bytes(struct.pack("<III", 0x46546C67, 2, 12 + len(body)) + body)
    print(f"wrote {out}: {len(names)} nodes, {len(P)} vertices, clips walk and wave")


def blender(src: str, outdir: str) -> None:
    """Step 2: Blender imports the glTF and exports the two binary FBX files."""
    import bpy  # type: ignore[import-not-found]

    out = Path(outdir)
    out.mkdir(parents=True, exist_ok=True)
    bpy.ops.wm.read_factory_settings(use_empty=True)
    bpy.context.scene.render.fps = 30
    bpy.ops.import_scene.gltf(filepath=src)
    for img in bpy.data.images:  # the texture as a file Blender can copy or embed
        img.filepath_raw = str(out / "checker.png")
        img.file_format = "PNG"
        img.save()
        img.filepath = str(out / "checker.png")
    for obj in [o for o in bpy.data.objects if o.type == "MESH" and not o.vertex_groups]:
        bpy.data.objects.remove(obj)  # the importer's bone display shape (an icosphere)
    arm = next(o for o in bpy.data.objects if o.type == "ARMATURE")
    arm.name = "Armature"
    actions = sorted(bpy.data.actions, key=lambda a: a.name)
    print("actions:", [a.name for a in actions])
    common = dict(use_selection=False, add_leaf_bones=False, bake_anim=True, bake_anim_use_all_actions=True,
                  bake_anim_use_nla_strips=False, bake_anim_step=1.0, bake_anim_simplify_factor=0.0,
                  bake_anim_force_startend_keying=True, use_armature_deform_only=False, mesh_smooth_type="OFF")
    bpy.ops.export_scene.fbx(filepath=str(out / "mixamo_yup_cm.fbx"), axis_forward="-Z", axis_up="Y",
                             apply_unit_scale=True, apply_scale_options="FBX_SCALE_NONE", global_scale=1.0,
                             path_mode="COPY", embed_textures=True, **common)
    import io_scene_fbx.export_fbx_bin as exporter  # type: ignore[import-not-found]
    import io_scene_fbx.fbx_utils as utils  # type: ignore[import-not-found]

    utils.FBX_VERSION = exporter.FBX_VERSION = 7700
    bpy.ops.export_scene.fbx(filepath=str(out / "mixamo_zup_77.fbx"), axis_forward="Y", axis_up="Z",
                             apply_unit_scale=False, apply_scale_options="FBX_SCALE_UNITS", global_scale=1.0,
                             path_mode="RELATIVE", embed_textures=False, **common)


#: bone → Properties70 lines added by step 3 (FBX's transform features; angles in degrees)
ASCII_EDITS = {
    "mixamorig:RightForeArm": ['P: "PreRotation", "Vector3D", "Vector", "", 10,20,30',
                               'P: "PostRotation", "Vector3D", "Vector", "", 5,-15,25',
                               'P: "RotationOrder", "enum", "", "", 4',
                               'P: "Lcl Rotation", "Lcl Rotation", "", "A", 20,-35,50'],
    "mixamorig:Spine1": ['P: "PreRotation", "Vector3D", "Vector", "", -30,15,0',
                         'P: "RotationOrder", "enum", "", "", 2',
                         'P: "Lcl Rotation", "Lcl Rotation", "", "A", -15,25,40'],
    "mixamorig:LeftShoulder": ['P: "PreRotation", "Vector3D", "Vector", "", 0,0,45',
                               'P: "RotationOffset", "Vector3D", "Vector", "", 0.005,0,0.01',
                               'P: "RotationPivot", "Vector3D", "Vector", "", 0.01,0.02,0.03',
                               'P: "ScalingPivot", "Vector3D", "Vector", "", 0.01,0,0',
                               'P: "Lcl Scaling", "Lcl Scaling", "", "A", 1.2,0.9,1.1'],
}


def ascii_fbx(src: str, outdir: str) -> None:
    """Step 3: Assimp's ASCII FBX of the glTF, with pre/post rotations, rotation orders and pivots added."""
    import re
    import subprocess

    out = Path(outdir) / "prerot_ascii.fbx"
    subprocess.run(["assimp", "export", src, str(out), "-ffbxa"], check=True, capture_output=True)
    lines = out.read_text().splitlines()
    edited = []
    current = None
    for line in lines:
        if line.lstrip().startswith("Model:"):
            current = next((b for b in ASCII_EDITS if f'"Model::{b}"' in line), None)
        edited.append(line)
        if current and line.strip() == "Properties70:  {":
            indent = line[: len(line) - len(line.lstrip())] + "\t"
            edited += [indent + p for p in ASCII_EDITS[current]]
            current = None
    text = "\n".join(edited) + "\n"
    # Assimp 5.2 writes key times 1000 times too large (milliseconds counted as seconds) and 24 fps: fix both
    text = re.sub(r"(KeyTime: \*\d+ \{\s*a: )([-0-9,]*)(\s*\})",
                  lambda m: m.group(1) + ",".join(str(int(v) // 1000) for v in m.group(2).split(",") if v.strip())
                  + m.group(3), text)
    text = text.replace('P: "TimeMode", "enum", "", "", 11', 'P: "TimeMode", "enum", "", "", 6')
    # a third animation stack with one layer and no curves (the reader skips it, saying so)
    stack = ('\tAnimationStack: 1999001, "AnimStack::empty", "" {\n\t\tProperties70:  {\n'
             '\t\t\tP: "LocalStop", "KTime", "Time", "", 46186158000\n\t\t}\n\t}\n'
             '\tAnimationLayer: 1999002, "AnimLayer::empty", "" {\n\t}\n')
    text = text.replace("\tAnimationStack: ", stack + "\tAnimationStack: ", 1)
    text = text.replace("Connections:  {\n", 'Connections:  {\n\tC: "OO", 1999002, 1999001\n', 1)
    out.write_text(text)
    print(f"wrote {out}")


def big_source(out: str, frames: int = 500, rings: int = 16, sides: int = 16) -> None:
    """benchmarks/bench_fbx.py's Mixamo-size character as glTF: the humanoid with four-joint fingers on both hands
    and a jaw (65 nodes), a tube of ``rings`` x ``sides`` vertices per bone (about 15,000), ``frames`` frames of
    motion."""
    import numpy as np

    import animkit
    from animkit.examples import load
    from animkit.keyframes import Clip
    from animkit.look.mesh import Mesh, Skin
    from animkit.model.joints import ball
    from animkit.scene import Scene

    fig = load("humanoid").figure
    for side in ("l", "r"):
        sign = 1.0 if side == "l" else -1.0
        for k, finger in enumerate(("thumb", "index", "middle", "ring", "pinky")):
            parent = f"hand_{side}"
            for j in range(4):
                name = f"{finger}{j + 1}_{side}"
                offset = (sign * 0.03, -0.01, 0.02 * (k - 2)) if j == 0 else (sign * 0.02, 0.0, 0.0)
                fig.add(name, parent, offset=offset, joint=ball(name))
                parent = name
    fig.add("head_top", "head", offset=(0.0, 0.12, 0.0))
    fig.add("jaw", "head", offset=(0.0, -0.03, 0.05), joint=ball("jaw"))
    names = fig.node_names
    rng = np.random.default_rng(7)
    t = np.arange(frames) / 30.0
    rest = fig.rest_pose()
    poses = np.tile(rest, (frames, 1))
    for d, dof in enumerate(fig.dofs):
        if dof.revolute:
            poses[:, d] += 0.3 * np.sin(2 * np.pi * rng.uniform(0.2, 1.0) * t + rng.uniform(0, 6.3))
    poses = fig.clip_to_limits(poses)
    clip = Clip.from_poses(fig, t, poses, name="dance", fps=30.0)
    W = fig.world_batch(rest[None])[0]
    index = {n: i for i, n in enumerate(names)}
    P, F, J, Wt, UV = [], [], [], [], []
    for arc in fig.arcs():
        if arc.parent is None or arc.parent.name == "world":
            continue
        a, b = W[index[arc.parent.name], :3, 3], W[index[arc.child.name], :3, 3]
        axis = b - a
        length = float(np.linalg.norm(axis))
        if length < 1e-6:
            continue
        d = axis / length
        u = np.cross(d, [0.0, 0.0, 1.0] if abs(d[2]) < 0.9 else [1.0, 0.0, 0.0])
        u /= np.linalg.norm(u)
        v = np.cross(d, u)
        base = len(P)
        for r in range(rings):
            f = r / (rings - 1)
            for k in range(sides):
                ang = 2 * np.pi * k / sides
                radius = 0.2 * min(0.05, 0.3 * length)
                P.append(a + f * axis + radius * (np.cos(ang) * u + np.sin(ang) * v))
                UV.append((k / sides, f))
                J.append([index[arc.parent.name], index[arc.child.name], 0, 0])
                Wt.append([1.0 - 0.5 * f, 0.5 * f, 0.0, 0.0])
        for r in range(rings - 1):
            for k in range(sides):
                a0, a1 = base + r * sides + k, base + r * sides + (k + 1) % sides
                b0, b1 = a0 + sides, a1 + sides
                F += [(a0, a1, b1), (a0, b1, b0)]
    Pa, Fa = np.array(P), np.array(F, dtype=np.intp)
    skin = Skin("body", tuple(names), np.linalg.inv(W), np.arange(len(names), dtype=np.intp))
    mesh = Mesh("body", names[0], 0, Fa, Pa, animkit.look.mesh.vertex_normals(Pa, Fa), np.array(UV), np.ones(4), None,
                skin, np.array(J, dtype=np.intp), np.array(Wt))
    animkit.save(out, Scene(fig, clips={"dance": clip}, meshes=(mesh,)))
    print(f"wrote {out}: {len(names)} nodes, {len(Pa)} vertices, {frames} frames")


def blender_big(src: str, out: str) -> None:
    """The Mixamo-size character through Blender's FBX exporter (binary 7.4, Y-up, centimetres)."""
    import bpy  # type: ignore[import-not-found]

    bpy.ops.wm.read_factory_settings(use_empty=True)
    bpy.context.scene.render.fps = 30
    bpy.ops.import_scene.gltf(filepath=src)
    for obj in [o for o in bpy.data.objects if o.type == "MESH" and not o.vertex_groups]:
        bpy.data.objects.remove(obj)
    action = bpy.data.actions[0]
    bpy.context.scene.frame_start, bpy.context.scene.frame_end = (int(v) for v in action.frame_range)
    bpy.ops.export_scene.fbx(filepath=out, add_leaf_bones=False, bake_anim=True, bake_anim_use_all_actions=False,
                             bake_anim_use_nla_strips=False, bake_anim_simplify_factor=0.0,
                             bake_anim_force_startend_keying=True, mesh_smooth_type="OFF")

#: real files by other tools (Debian's assimp-testmodels 5.2.5, Assimp's test/models/FBX; BSD-3-clause), copied
REAL = {"huesitos.fbx": "huesitos.fbx", "maya_cubes_pivots.fbx": "cubes_with_mirroring_and_pivot.fbx",
        "max_box_77_ascii.fbx": "maxPbrMaterial_metalRough.fbx"}
#: per node of maya_cubes_pivots.fbx (in file order: the second Cube1 is the one with pivots), what
#: maya_prepost.fbx adds: PreRotation, PostRotation, Lcl Rotation (degrees) and RotationOrder (0 XYZ … 5 ZYX)
PREPOST = [("Cube2", (30.0, -20.0, 45.0), (10.0, 25.0, -15.0), (15.0, 40.0, -25.0), 4),
           ("Cube1", (-35.0, 10.0, 20.0), (0.0, -30.0, 5.0), (5.0, -60.0, 30.0), 2),
           ("Cube3", (0.0, 90.0, 0.0), (0.0, 0.0, 0.0), (20.0, 0.0, 10.0), 1),
           ("Cube1", (12.0, 0.0, -8.0), (0.0, 0.0, 30.0), (45.0, 45.0, 0.0), 5)]


def real(outdir: str, models: str = "/usr/share/assimp/models/FBX") -> None:
    """Step 4 (``apt-get install assimp-testmodels``): copy the real files (:data:`REAL`) and write
    ``maya_prepost.fbx``: the Maya ASCII file with pre- and post-rotations, rotations and rotation orders added to
    its four nodes (:data:`PREPOST`), its rotation and scaling pivots, offsets and mirroring kept."""
    import shutil

    out = Path(outdir)
    for name, original in REAL.items():
        shutil.copyfile(Path(models) / original, out / name)
    text = (out / "maya_cubes_pivots.fbx").read_text()
    parts = text.split('Model::')
    k = 0
    for i in range(1, len(parts)):
        name = parts[i].split('"', 1)[0]
        if k < len(PREPOST) and name == PREPOST[k][0] and '"Mesh" {' in parts[i][:60]:
            _, pre, post, rot, order = PREPOST[k]

            def vec(v: tuple[float, float, float]) -> str:
                return ",".join(f"{x:g}" for x in v)

            extra = (f'\t\t\tP: "PreRotation", "Vector3D", "Vector", "",{vec(pre)}\n'
                     f'\t\t\tP: "PostRotation", "Vector3D", "Vector", "",{vec(post)}\n'
                     f'\t\t\tP: "RotationOrder", "enum", "", "",{order}\n'
                     f'\t\t\tP: "Lcl Rotation", "Lcl Rotation", "", "A",{vec(rot)}\n')
            head, sep, tail = parts[i].partition("Properties70:  {\n")
            parts[i] = head + sep + extra + tail
            k += 1
    assert k == len(PREPOST), f"found {k} of the {len(PREPOST)} nodes"
    (out / "maya_prepost.fbx").write_text("Model::".join(parts))
    print(f"wrote {', '.join(REAL)} and maya_prepost.fbx into {out}")


def blender_reference(fbx: str, out: str, frames: tuple[int, ...] = (1, 11, 21, 31)) -> None:
    """Blender's FBX importer as an oracle for a skinned file (``huesitos.fbx``, where three.js's FBXLoader is off
    once animated): every mesh's evaluated (skinned) world vertices at the given scene frames, Blender's Z-up
    metres, as JSON (``huesitos_blender.json``)."""
    import json

    import bpy  # type: ignore[import-not-found]

    bpy.ops.wm.read_factory_settings(use_empty=True)
    bpy.ops.import_scene.fbx(filepath=fbx)
    scene = bpy.context.scene
    result: dict = {"fps": scene.render.fps / scene.render.fps_base, "frame_start": scene.frame_start,
                    "blender": bpy.app.version_string, "frames": {}}
    for frame in frames:
        scene.frame_set(frame)
        graph = bpy.context.evaluated_depsgraph_get()
        for obj in sorted(scene.objects, key=lambda o: o.name):
            if obj.type == "MESH":
                ev = obj.evaluated_get(graph)
                me = ev.to_mesh()
                result["frames"].setdefault(str(frame), {})[obj.name] = [
                    [round(c, 7) for c in ev.matrix_world @ v.co] for v in me.vertices]
                ev.to_mesh_clear()
    Path(out).write_text(json.dumps(result))


def hand_61(out: str) -> None:
    """``swing_61_ascii.fbx``: an FBX 6.1 ASCII file written by hand (no tool at hand writes 6.1), in the form of
    Blender 2.79's 6.1 output (Properties60, names in Connect lines, a Take with KTime keys): three bones in
    centimetres, Y-up, 30 fps; the root at (0, 100, 0) with a 30° pre-rotation about Z, the arm 50 cm along it, the
    hand 40 cm further, and a take "Swing" turning the arm about Z from 0° to 90° over one second (linear keys)."""
    second = 46186158000  # FBX time units per second

    def model(name: str, t: tuple[float, float, float], pre: tuple[float, float, float] = (0, 0, 0)) -> str:
        rows = [("QuaternionInterpolate", "bool", "", "0"), ("Visibility", "Visibility", "A+", "1"),
                ("Lcl Translation", "Lcl Translation", "A+", "{},{},{}".format(*t)),
                ("Lcl Rotation", "Lcl Rotation", "A+", "0,0,0"), ("Lcl Scaling", "Lcl Scaling", "A+", "1,1,1"),
                ("RotationOrder", "enum", "", "0"), ("PreRotation", "Vector3D", "", "{},{},{}".format(*pre)),
                ("PostRotation", "Vector3D", "", "0,0,0"), ("RotationActive", "bool", "", "1"),
                ("InheritType", "enum", "", "1")]
        props = "".join(f'\t\t\tProperty: "{a}", "{b}", "{c}",{d}\n' for a, b, c, d in rows)
        return (f'\tModel: "Model::{name}", "Limb" {{\n\t\tVersion: 232\n\t\tProperties60:  {{\n{props}\t\t}}\n'
                '\t\tMultiLayer: 0\n\t\tMultiTake: 1\n\t\tShading: Y\n\t\tCulling: "CullingOff"\n'
                '\t\tTypeFlags: "Skeleton"\n\t}\n')

    def channel(axis: str, keys: list[tuple[int, float]]) -> str:
        p = "\t" * 5
        body = ",".join(f"{t},{v},L" for t, v in keys)
        return (f'{p}Channel: "{axis}" {{\n{p}\tDefault: {keys[0][1]}\n{p}\tKeyVer: 4005\n{p}\tKeyCount: {len(keys)}\n'
                f'{p}\tKey: \n{p}\t\t{body}\n{p}\tColor: 1,0,0\n{p}}}\n')

    settings = [("UpAxis", 1), ("UpAxisSign", 1), ("FrontAxis", 2), ("FrontAxisSign", 1), ("CoordAxis", 0),
                ("CoordAxisSign", 1)]
    text = ("; FBX 6.1.0 project file\n; Written by hand for animkit's tests (tests/data/fbx/SOURCES.md) in the form "
            "of Blender 2.79's FBX 6.1 ASCII output\n; ----------------------------------------------------\n\n"
            'FBXHeaderExtension:  {\n\tFBXHeaderVersion: 1003\n\tFBXVersion: 6100\n'
            '\tCreator: "animkit tests (hand-written)"\n}\nCreationTime: "2026-11-27 00:00:00:000"\n'
            'Creator: "animkit tests (hand-written)"\n\nDefinitions:  {\n\tVersion: 100\n\tCount: 4\n'
            '\tObjectType: "Model" {\n\t\tCount: 3\n\t}\n\tObjectType: "GlobalSettings" {\n\t\tCount: 1\n\t}\n}\n\n'
            "Objects:  {\n" + model("Root", (0, 100, 0), (0, 0, 30)) + model("Arm", (50, 0, 0))
            + model("Hand", (40, 0, 0)) + "\tGlobalSettings:  {\n\t\tVersion: 1000\n\t\tProperties60:  {\n"
            + "".join(f'\t\t\tProperty: "{k}", "int", "",{v}\n' for k, v in settings)
            + '\t\t\tProperty: "UnitScaleFactor", "double", "",1\n\t\t\tProperty: "TimeMode", "enum", "",6\n'
            "\t\t}\n\t}\n}\n\nConnections:  {\n"
            '\tConnect: "OO", "Model::Root", "Model::Scene"\n\tConnect: "OO", "Model::Arm", "Model::Root"\n'
            '\tConnect: "OO", "Model::Hand", "Model::Arm"\n}\n\nTakes:  {\n\tCurrent: "Swing"\n'
            f'\tTake: "Swing" {{\n\t\tFileName: "Swing.tak"\n\t\tLocalTime: 0,{second}\n'
            f'\t\tReferenceTime: 0,{second}\n\t\tModel: "Model::Arm" {{\n\t\t\tVersion: 1.1\n'
            '\t\t\tChannel: "Transform" {\n\t\t\t\tChannel: "R" {\n'
            + channel("X", [(0, 0)]) + channel("Y", [(0, 0)]) + channel("Z", [(0, 0), (second, 90)])
            + "\t\t\t\t\tLayerType: 2\n\t\t\t\t}\n\t\t\t}\n\t\t}\n\t}\n}\n")
    Path(out).write_text(text)


def _leave() -> None:
    """Exit without bpy's teardown, which sometimes crashes (SIGSEGV) after the files are written."""
    from os import _exit

    sys.stdout.flush()
    sys.stderr.flush()
    _exit(0)


def main(argv: list[str]) -> None:
    if len(argv) >= 2 and argv[0] == "source":
        source(argv[1])
    elif len(argv) >= 3 and argv[0] == "blender":
        blender(argv[1], argv[2])
        _leave()
    elif len(argv) >= 2 and argv[0] == "big-source":
        big_source(argv[1])
    elif len(argv) >= 3 and argv[0] == "big-blender":
        blender_big(argv[1], argv[2])
        _leave()
    elif len(argv) >= 3 and argv[0] == "ascii":
        ascii_fbx(argv[1], argv[2])
    elif len(argv) >= 2 and argv[0] == "hand-61":
        hand_61(argv[1])
    elif len(argv) >= 2 and argv[0] == "real":
        real(argv[1])
    elif len(argv) >= 3 and argv[0] == "blender-reference":
        blender_reference(argv[1], argv[2])
        _leave()
    else:
        raise SystemExit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])

// animkit's HTML viewer: the parts of three.js it uses (bundled by esbuild, tree-shaken, minified).
export {
  AmbientLight, AnimationMixer, Box3, BufferGeometry, Color, DirectionalLight, Float32BufferAttribute,
  HemisphereLight, Line, LineBasicMaterial, LineSegments, Matrix4, Mesh, MeshLambertMaterial, MeshBasicMaterial,
  PerspectiveCamera, Scene, SphereGeometry, SRGBColorSpace, Vector3, WebGLRenderer, LoopRepeat, Group, DoubleSide,
} from 'three';
export { OrbitControls } from 'three/addons/controls/OrbitControls.js';
export { GLTFLoader } from 'three/addons/loaders/GLTFLoader.js';

"""The model and its maths: transforms, joints (the articulation A), the scene graph's nodes and arcs, FK, the figure
and its rig (humanoid/quadruped matchers, human ranges, chains)."""

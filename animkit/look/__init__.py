"""What a figure looks like: node geometry drawn as triangles, meshes and linear-blend skinning, the surface that
motion measures read heights from."""

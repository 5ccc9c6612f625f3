"""The Docker-API backend: the same task layers as OCI images, one container per episode, one
exec per command, every blocker condition realised with real faults inside the container."""

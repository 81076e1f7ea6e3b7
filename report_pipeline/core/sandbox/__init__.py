"""One confined child: fork, confine (address space, CPU, no descriptors but its socket, no
environment), speak typed messages over a socket, and say how the child ended. The decoder
pool, the planning walk and the review's evidence preview all use it."""

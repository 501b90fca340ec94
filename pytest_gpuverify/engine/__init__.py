"""One session and one target's run: phases, verdict and the artifact built from them."""

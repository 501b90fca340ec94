"""The Slurm launcher (``--gpu-slurm``): its clients and its controller."""

"""One module per operator family (torch_aclnn/_registry.py lists them): its
public Python API and its autograd formulas. Schemas are in
csrc/torch_aclnn.cpp, contracts in csrc/contracts/<stem>.h, kernels in
csrc/cpu/<stem>.cpp and csrc/cuda/<stem>.cu."""

"""One module per operator family: its public Python API, its autograd
formulas and its NPU glue. Schemas are in csrc/torch_aclnn.cpp, contracts in
csrc/contracts/<family>.h, kernels in csrc/{cpu,meta,cuda}/<family>.*"""

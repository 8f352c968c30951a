import numpy as np, workbench as wb
import tests.test_dsl_core_parity as T
tiler=(2,2); m=n=1; s0=s1=0
sp = T.flat_offsets.specialize(tuple([np.zeros((2,2,2,2),np.int32)]*4+[np.zeros((2,2,2,2,2),np.int32), np.zeros((2,2,2,2),np.int32), m,n,s0,s1,tiler]))
print(sp.python_source)
print(sp.cuda_source)

package bench

// SelfCPU is selfCPU for the external tests.
var SelfCPU = selfCPU

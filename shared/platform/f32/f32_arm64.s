#include "textflag.h"

// func lanes4x4(q, ex []float32) [16]float32
//
// V0-V3: the four vectors' lanes; per four values of q, one FMLA a vector
// (Go's loop: four FMADDS, each a fused multiply-add as FMLA's lanes are).
TEXT ·lanes4x4(SB), NOSPLIT, $0-112
	MOVD q_base+0(FP), R0
	MOVD q_len+8(FP), R1
	MOVD ex_base+24(FP), R2
	MOVD $ret+48(FP), R3
	// R2, R5, R6, R7: the four vectors (R4: a vector's bytes).
	LSL  $2, R1, R4
	ADD  R4, R2, R5
	ADD  R4, R5, R6
	ADD  R4, R6, R7
	// R8: the values left of the first len(q)&^3.
	AND  $~3, R1, R8
	VEOR V0.B16, V0.B16, V0.B16
	VEOR V1.B16, V1.B16, V1.B16
	VEOR V2.B16, V2.B16, V2.B16
	VEOR V3.B16, V3.B16, V3.B16

loop:
	CBZ    R8, done
	VLD1.P 16(R0), [V4.S4]
	VLD1.P 16(R2), [V5.S4]
	VLD1.P 16(R5), [V6.S4]
	VLD1.P 16(R6), [V7.S4]
	VLD1.P 16(R7), [V8.S4]
	VFMLA  V4.S4, V5.S4, V0.S4
	VFMLA  V4.S4, V6.S4, V1.S4
	VFMLA  V4.S4, V7.S4, V2.S4
	VFMLA  V4.S4, V8.S4, V3.S4
	SUB    $4, R8
	B      loop

done:
	VST1 [V0.S4, V1.S4, V2.S4, V3.S4], (R3)
	RET

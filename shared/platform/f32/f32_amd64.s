#include "textflag.h"

// func lanes4x4(q, ex []float32) [16]float32
//
// X0-X3: the four vectors' lanes; per four values of q, one MULPS and one
// ADDPS a vector (Go's loop: four MULSS and four ADDSS).
TEXT ·lanes4x4(SB), NOSPLIT, $0-112
	MOVQ q_base+0(FP), SI
	MOVQ q_len+8(FP), BX
	MOVQ ex_base+24(FP), DI
	// R8: a vector's bytes; DI, R9, R10, R11: the four vectors.
	LEAQ (BX*4), R8
	LEAQ (DI)(R8*1), R9
	LEAQ (R9)(R8*1), R10
	LEAQ (R10)(R8*1), R11
	// CX: the bytes of the first len(q)&^3 values.
	MOVQ BX, CX
	ANDQ $-4, CX
	SHLQ $2, CX
	XORPS X0, X0
	XORPS X1, X1
	XORPS X2, X2
	XORPS X3, X3
	XORQ  AX, AX

loop:
	CMPQ   AX, CX
	JGE    done
	MOVUPS (SI)(AX*1), X4
	MOVUPS (DI)(AX*1), X5
	MULPS  X4, X5
	ADDPS  X5, X0
	MOVUPS (R9)(AX*1), X6
	MULPS  X4, X6
	ADDPS  X6, X1
	MOVUPS (R10)(AX*1), X7
	MULPS  X4, X7
	ADDPS  X7, X2
	MOVUPS (R11)(AX*1), X8
	MULPS  X4, X8
	ADDPS  X8, X3
	ADDQ   $16, AX
	JMP    loop

done:
	LEAQ   ret+48(FP), DX
	MOVUPS X0, 0(DX)
	MOVUPS X1, 16(DX)
	MOVUPS X2, 32(DX)
	MOVUPS X3, 48(DX)
	RET

#!/bin/sh
# gen_ehfuncs.sh N: assembler source of N empty functions, each with its
# own call-frame information (one FDE each, 8 bytes of .eh_frame_hdr
# table each), for rprog_ehtab: 40,000 of them make a ~320 KB table.
awk -v n="$1" 'BEGIN {
	print "\t.text"
	for (i = 0; i < n; i++)
		printf "\t.globl eh_f%d\n\t.type eh_f%d, @function\neh_f%d:\n\t.cfi_startproc\n\tret\n\t.cfi_endproc\n\t.size eh_f%d, .-eh_f%d\n", i, i, i, i, i
	print "\t.section .note.GNU-stack,\"\",@progbits"
}'

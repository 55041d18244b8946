module gopair

go 1.19

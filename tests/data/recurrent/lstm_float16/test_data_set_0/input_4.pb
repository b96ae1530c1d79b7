
B	initial_hJ%Ò³KµD¬Ü478! 62-O5¬™
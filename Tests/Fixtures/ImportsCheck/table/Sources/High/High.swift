import Low

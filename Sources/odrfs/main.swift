print("odrfs")

print("itravel")

---
kinds: url_credentials
---
import mongoose from "mongoose";

const uri = "mongodb+srv://appUser:{{url_password}}@cluster0.x7k2p.mongodb.net/shop?retryWrites=true&w=majority";

export async function connect(): Promise<void> {
  await mongoose.connect(uri, { serverSelectionTimeoutMS: 5000 });
  console.log("connected to", mongoose.connection.name);
}

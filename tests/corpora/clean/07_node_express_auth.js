const express = require("express");
const bcrypt = require("bcrypt");
const jwt = require("jsonwebtoken");

const router = express.Router();
const JWT_SECRET = process.env.JWT_SECRET;

router.post("/login", async (req, res) => {
  const { email, password } = req.body;
  const user = await User.findOne({ email });
  if (!user || !(await bcrypt.compare(password, user.passwordHash))) {
    return res.status(401).json({ error: "invalid credentials" });
  }
  const token = jwt.sign({ sub: user.id }, JWT_SECRET, { expiresIn: "1h" });
  res.cookie("token", token, { httpOnly: true, secure: true, sameSite: "strict" });
  return res.json({ token, user: { id: user.id, email: user.email } });
});

const headers = { Authorization: `Bearer ${token}`, "x-api-key": apiKey };
module.exports = router;

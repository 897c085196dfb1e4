---
kinds: google_api_key
---
// src/firebase.js
import { initializeApp } from "firebase/app";

const firebaseConfig = {
  apiKey: "{{google_api_key}}",
  authDomain: "acme-chat-5f1e2.firebaseapp.com",
  projectId: "acme-chat-5f1e2",
  storageBucket: "acme-chat-5f1e2.appspot.com",
  messagingSenderId: "845120937461",
  appId: "1:845120937461:web:3c2d1e0f9a8b7c6d5e4f3a",
};

export const app = initializeApp(firebaseConfig);

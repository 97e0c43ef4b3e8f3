// Who the operator is. With Firebase Auth (production, and the local
// runner's Auth emulator) the page signs in through the Firebase JS SDK,
// bundled here, and sends the ID token as Authorization: Bearer; the Admin
// function checks the user's record (the operator claim, or a listed
// verified email). In development identity mode it names the operator in
// X-Baton-User, which must be listed in BATON_OPERATORS.
import { initializeApp } from 'firebase/app';
import {
  connectAuthEmulator, getAuth, GoogleAuthProvider, onAuthStateChanged,
  signInWithEmailAndPassword, signInWithPopup, signOut,
} from 'firebase/auth';

let firebaseAuth = null;

/** Starts the sign-in of config (/admin/config.json); calls onUser with a session or null. */
export function watchOperator(config, onUser) {
  if (config.mode !== 'firebase') {
    const user = localStorage.getItem('baton.operator');
    onUser(user ? devSession(user) : null);
    return () => {};
  }
  const app = initializeApp({ apiKey: config.apiKey || 'unset', projectId: config.projectId, authDomain: config.authDomain });
  firebaseAuth = getAuth(app);
  if (config.emulator) connectAuthEmulator(firebaseAuth, config.emulator, { disableWarnings: true });
  return onAuthStateChanged(firebaseAuth, (user) => onUser(user ? firebaseSession(user) : null));
}

function firebaseSession(user) {
  return {
    name: user.email || user.uid,
    headers: async () => ({ Authorization: `Bearer ${await user.getIdToken()}` }),
    signOut: () => signOut(firebaseAuth),
  };
}

function devSession(user) {
  return {
    name: user,
    headers: async () => ({ 'X-Baton-User': user }),
    signOut: async () => {
      localStorage.removeItem('baton.operator');
      location.reload();
    },
  };
}

/** Signs in with an email and a password (Firebase), or as a user id (development identity). */
export async function signInWith(config, email, password) {
  if (config.mode !== 'firebase') {
    localStorage.setItem('baton.operator', email);
    location.reload();
    return;
  }
  await signInWithEmailAndPassword(firebaseAuth, email, password);
}

/** Signs in with a Google account (Firebase, production). */
export async function signInWithGoogle() {
  await signInWithPopup(firebaseAuth, new GoogleAuthProvider());
}

// Who this page is. With the Firebase Auth emulator (the local runner's
// default) the page signs in anonymously through the Firebase JS SDK, exactly
// as a production page signs in to Firebase Auth, and sends its ID token as
// Authorization: Bearer; the functions verify it with the Firebase Admin SDK.
// The SDK keeps the user in IndexedDB, so every tab of a browser profile is
// the same user, and refreshes the token before it expires.
//
// In development identity mode (BATON_DEV_IDENTITY=true, or no Node.js for
// the emulator) the page instead names a user of its own in X-Baton-User.

/**
 * Signs in as /config.json's "auth" says and returns the user id, a
 * function giving the headers that identify the user on each request,
 * socketAuth, the first frame of a live socket (which cannot carry
 * headers), refresh, which gets a new ID token now (and throws when the
 * sign-in no longer holds), and signOut, after which the next load signs
 * in anew.
 */
export async function signIn(auth) {
  if (auth?.mode !== 'firebase') return devIdentity();
  // The SDK's browser builds, served by the local runner from its pinned npm
  // install (see the import map in index.html).
  const { initializeApp } = await import(/* @vite-ignore */ `${auth.sdk}firebase-app.js`);
  const { getAuth, connectAuthEmulator, signInAnonymously, signOut } = await import(/* @vite-ignore */ `${auth.sdk}firebase-auth.js`);
  const app = initializeApp({ apiKey: auth.apiKey, projectId: auth.projectId, authDomain: `${auth.projectId}.firebaseapp.com` });
  const firebaseAuth = getAuth(app);
  connectAuthEmulator(firebaseAuth, auth.emulator, { disableWarnings: true });
  await firebaseAuth.authStateReady();
  let user = firebaseAuth.currentUser;
  if (user) {
    // A user kept from an earlier visit whose sign-in no longer holds
    // (its refresh token refused: the user was deleted, or the Auth
    // emulator started afresh) signs in anew.
    await user.getIdToken().catch(async () => {
      await signOut(firebaseAuth);
      user = null;
    });
  }
  user ??= (await signInAnonymously(firebaseAuth)).user;
  return {
    user: user.uid,
    // getIdToken answers from the SDK's cache until the token nears expiry.
    headers: async () => ({ Authorization: `Bearer ${await user.getIdToken()}` }),
    socketAuth: async () => ({ auth: await user.getIdToken() }),
    refresh: () => user.getIdToken(true),
    signOut: () => signOut(firebaseAuth),
  };
}

function devIdentity() {
  let user = localStorage.getItem('baton.user');
  if (!user) {
    const bytes = crypto.getRandomValues(new Uint8Array(6));
    user = 'user-' + Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');
    localStorage.setItem('baton.user', user);
  }
  return {
    user,
    headers: async () => ({ 'X-Baton-User': user }),
    socketAuth: async () => ({ user }),
    refresh: async () => {
      throw new Error('a development identity has no token to refresh');
    },
    signOut: async () => localStorage.removeItem('baton.user'),
  };
}

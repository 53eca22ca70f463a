import { render } from 'preact';
import { App } from './app.js';
import { openSession, portalClient, takeLink } from './session.js';
import './style.css';

const root = document.getElementById('app')!;
const link = takeLink(window.location, window.history);
if (link === null) render(<App client={null} />, root);
else
  void openSession(link).then((session) =>
    render(
      'token' in session ? (
        <App client={portalClient(session.token)} />
      ) : (
        <App client={null} failure={session.failure} />
      ),
      root,
    ),
  );

/**
 * The portal's pages as hash routes (`#/subscriptions/{id}`), so the browser's back button works
 * and nothing after `#` ever reaches a server: the session token arrives the same way.
 */
import { useEffect, useState } from 'preact/hooks';

/** A page of the portal. */
export type Route =
  | { page: 'subscriptions' }
  | { page: 'new-subscription' }
  | { page: 'subscription'; id: string }
  | { page: 'delivery'; id: string; deliveryId: string }
  | { page: 'catalogue' }
  | { page: 'events' }
  | { page: 'event'; id: string };

/** The hash of a route, for `href`s and `navigate`. */
export function href(route: Route): string {
  switch (route.page) {
    case 'subscriptions':
      return '#/';
    case 'new-subscription':
      return '#/subscriptions/new';
    case 'subscription':
      return `#/subscriptions/${encodeURIComponent(route.id)}`;
    case 'delivery':
      return `#/subscriptions/${encodeURIComponent(route.id)}/deliveries/${encodeURIComponent(route.deliveryId)}`;
    case 'catalogue':
      return '#/catalogue';
    case 'events':
      return '#/events';
    case 'event':
      return `#/events/${encodeURIComponent(route.id)}`;
  }
}

/** The route of a hash; anything unknown is the subscription list. */
export function parseRoute(hash: string): Route {
  const parts = hash.replace(/^#\/?/, '').split('/').filter(Boolean).map(decodeURIComponent);
  if (parts[0] === 'catalogue') return { page: 'catalogue' };
  if (parts[0] === 'events')
    return parts[1] === undefined ? { page: 'events' } : { page: 'event', id: parts[1] };
  if (parts[0] === 'subscriptions' && parts[1] === 'new') return { page: 'new-subscription' };
  if (parts[0] === 'subscriptions' && parts[1] !== undefined) {
    if (parts[2] === 'deliveries' && parts[3] !== undefined)
      return { page: 'delivery', id: parts[1], deliveryId: parts[3] };
    return { page: 'subscription', id: parts[1] };
  }
  return { page: 'subscriptions' };
}

/** Goes to `route`, as a link would. */
export function navigate(route: Route): void {
  window.location.hash = href(route);
}

/** The current route, following the address bar. */
export function useRoute(): Route {
  const [route, setRoute] = useState(() => parseRoute(window.location.hash));
  useEffect(() => {
    const follow = () => {
      setRoute(parseRoute(window.location.hash));
      window.scrollTo(0, 0);
    };
    window.addEventListener('hashchange', follow);
    return () => window.removeEventListener('hashchange', follow);
  }, []);
  return route;
}

SELECT dest, COUNT(*) AS n FROM flights WHERE origin = 'JFK' AND dep_time IS NOT NULL
AND dest IN (SELECT dest FROM flights WHERE origin = 'JFK' AND carrier IN ('AA','DL','UA','US') GROUP BY dest HAVING COUNT(*) >= 100) AND dest IN (SELECT dest FROM flights WHERE origin = 'JFK' AND carrier IN ('B6','F9','FL','WN','VX') GROUP BY dest HAVING COUNT(*) >= 100) GROUP BY dest

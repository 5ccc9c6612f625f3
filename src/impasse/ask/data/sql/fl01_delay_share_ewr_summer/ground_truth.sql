SELECT carrier, ROUND(AVG(CASE WHEN arr_delay > 15 THEN 1.0 ELSE 0.0 END), 4) AS delayed_share
FROM flights WHERE origin = 'EWR' AND month IN (5,6,7,8,9) AND arr_delay IS NOT NULL
GROUP BY carrier HAVING COUNT(*) >= 1000 ORDER BY delayed_share DESC
